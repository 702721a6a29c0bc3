set -u
export LC_ALL=C PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
STATE=/var/lib/netroot/nfs-server.state

files_digest() {
    for f in /usr/local/sbin/netroot-nfs-check \
        /etc/ganesha/ganesha.conf /usr/local/sbin/netroot-ganesha \
        /usr/bin/ganesha.nfsd \
        /etc/netroot/dnsmasq.conf /usr/local/sbin/netroot-dnsmasq \
        /srv/netroot-tftp /usr/sbin/dnsmasq \
        $(find /usr/local/lib/netroot -type f 2>/dev/null | sort) \
        ; do
        if [ -f "$f" ]; then
            printf '%s %s\n' "$(stat -c '%a %u %g' "$f")" "$(sha256sum < "$f")"
        elif [ -e "$f" ]; then
            printf '%s %s\n' "$(stat -c '%F %a %u %g' "$f")" "$f"
        else
            printf 'missing %s\n' "$f"
        fi
    done | sha256sum | cut -d' ' -f1
}

running=true
runner=auto
if [ "$runner" = auto ]; then
    if [ -d /run/systemd/system ]; then runner=systemd; else runner=script; fi
fi
if [ "$runner" = systemd ]; then
    systemctl is-active --quiet nfs-ganesha || running=false
else
    /usr/local/sbin/netroot-ganesha status >/dev/null 2>&1 || running=false
fi
/usr/local/sbin/netroot-dnsmasq status >/dev/null 2>&1 || running=false

hex() { case $1 in '' | *[!0-9a-f]*) return 1 ;; esac; }
stamp=$(head -c 200 "$STATE" 2>/dev/null | head -n 1)
case $stamp in *[!0-9a-f\ ]*) stamp='' ;; esac
printf '{"stamp": "%s", "files": "%s", "running": %s, "exported": {' "$stamp" "$(files_digest)" "$running"
current=$(readlink /srv/netroot/other/current 2>/dev/null)
current=${current##*/}
hex "$current" || current=''
printf '"%s": {"current": "%s", "versions": [' other "$current"
sep=''
for v in /srv/netroot/other/versions/*; do
    [ -d "$v" ] && [ ! -L "$v" ] || continue
    v=${v##*/}
    hex "$v" || continue
    printf '%s"%s"' "$sep" "$v"
    sep=', '
done
printf ']}'
current=$(readlink /srv/netroot/raspbian/current 2>/dev/null)
current=${current##*/}
hex "$current" || current=''
printf ', "%s": {"current": "%s", "versions": [' raspbian "$current"
sep=''
for v in /srv/netroot/raspbian/versions/*; do
    [ -d "$v" ] && [ ! -L "$v" ] || continue
    v=${v##*/}
    hex "$v" || continue
    printf '%s"%s"' "$sep" "$v"
    sep=', '
done
printf ']}'
printf '}}\n'
