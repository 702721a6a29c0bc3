set -u
CHECK=0
DIFF=0
VERSION='<current>'
NAME=pi-01
INSTALL=1
SET_HOSTNAME=1
# 1 when the board reboots right after this script (its boot config changed): the boot's own
# netroot-mount.service mounts the version, so it is not mounted here first and again then.
DEFER=0
# 1 for a rollout's preparing run (netroot_board_prepare_only): the scripts and the unit only,
# no version assigned, nothing enabled or mounted; its batch does the rest without a reload.
PREPARE=0
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export SYSTEMD_COLORS=0 SYSTEMD_PAGER=

# One provision at a time per board: a second run's `systemctl restart` would cancel the first
# one's start job (SIGTERM to netroot-mount halfway through a switch).
mkdir -p /run/netroot
exec 9>/run/netroot/.provision.lock
flock -w 600 9 || { echo "netroot: another provision of this board holds /run/netroot/.provision.lock" >&2; exit 1; }

changed() { echo "changed: $*"; }
fail() { echo "netroot: $*" >&2; exit 1; }

# Every managed file's digest and mode, read at once: a file already right costs no command of
# its own (each exec costs ~0.1 s on an emulated board; decoding and comparing one file took six).
known=$'\n'$(sha256sum /usr/local/sbin/netroot-mount /usr/local/sbin/netroot-chroot /etc/systemd/system/netroot-mount.service /etc/netroot/assigned /etc/hostname 2>/dev/null; stat -c '%a %n' /usr/local/sbin/netroot-mount /usr/local/sbin/netroot-chroot /etc/systemd/system/netroot-mount.service /etc/netroot/assigned /etc/hostname 2>/dev/null)$'\n'

# put PATH MODE BASE64 SHA256: write the file when content or mode differ (atomically: same-dir
# rename); nothing to do when `known` lists the file with that digest and mode.
put() {
    local path=$1 mode=$2 new dir
    if [[ $known == *$'\n'"$4  $path"$'\n'* && $known == *$'\n'"$mode $path"$'\n'* ]]; then
        return 1
    fi
    dir=${path%/*}
    if [ "$CHECK" = 1 ] || [ ! -d "$dir" ]; then new=$(mktemp); else new=$(mktemp "$path.XXXXXX"); fi
    printf '%s' "$3" | base64 -d >"$new" || fail "cannot decode $path"
    if [ -f "$path" ] && cmp -s "$new" "$path" && [ "$(stat -c %a "$path")" = "$mode" ]; then
        rm -f "$new"
        return 1
    fi
    if [ "$DIFF" = 1 ]; then
        diff -u --label "$path (before)" --label "$path (after)" \
            "$([ -f "$path" ] && echo "$path" || echo /dev/null)" "$new"
    fi
    if [ "$CHECK" = 1 ]; then
        rm -f "$new"
        changed "$path (check mode: not written)"
        return 0
    fi
    if [ ! -d "$dir" ]; then
        mkdir -p "$dir"
        mv -f "$new" "$dir/.netroot.tmp.$$" && new="$dir/.netroot.tmp.$$"
    fi
    chmod "$mode" "$new" && mv -f "$new" "$path" || fail "cannot write $path"
    changed "$path"
}

# A board that has just booted may still be mounting its version (netroot-mount.service
# activating: NFS under a boot storm takes a while, and SSH answers before it is done). A
# restart now would cancel that start job halfway through its mount and could fail the switch:
# wait for the unit to settle first, at most its own start timeout.
waited=0
while [ "$waited" -lt 300 ]; do
    case "$(systemctl show -P ActiveState netroot-mount.service 2>/dev/null)" in
    activating | deactivating | reloading) ;;
    *) break ;;
    esac
    [ "$waited" = 0 ] && echo "netroot: $NAME: waiting for the running netroot-mount.service (boot) to finish" >&2
    sleep 1
    waited=$((waited + 1))
done

# What is mounted, read with builtins as netroot-chroot does (mountinfo's field 5 is the mount
# point): `mountpoint` and `cat` cost ~0.1 s an exec on an emulated board.
mounted_before=""
while read -r _id _parent _dev _root point _rest; do
    if [ "$point" = /run/netroot/root ]; then
        [ -s /run/netroot/mounted ] && read -r mounted_before </run/netroot/mounted
        break
    fi
done </proc/self/mountinfo

# NFS client tools: preinstalled on the lab boards (no network); apt-get where there is one.
if [ ! -x /sbin/mount.nfs ] && [ ! -x /usr/sbin/mount.nfs ]; then
    if [ "$INSTALL" = 1 ] && [ -x /usr/bin/apt-get ]; then
        if [ "$CHECK" = 0 ]; then
            DEBIAN_FRONTEND=noninteractive apt-get install -y -q nfs-common >&2 \
                || fail "apt-get install nfs-common failed"
        fi
        changed "installed nfs-common"
    else
        fail "$NAME: mount.nfs is missing and cannot be installed here (no apt-get, or netroot_board_install_packages is false): install nfs-common"
    fi
fi
for tool in mountpoint timeout chroot systemctl base64 cmp flock; do
    command -v "$tool" >/dev/null || fail "$NAME: $tool is missing on the board"
done

scripts=0
put /usr/local/sbin/netroot-mount 755 IyEvYmluL2Jhc2gKIyBuZXRyb290LW1vdW50OiBtb3VudCB0aGlzIGJvYXJkJ3MgYXNzaWduZWQgbmV0cm9vdCB2ZXJzaW9uIGFuZCBwcmVwYXJlIGl0cyBjaHJvb3QuCiMgTWFuYWdlZCBieSBuZXRyb290IChyb2xlIG5ldHJvb3RfYm9hcmQpIGZvciBwaS0wMTsgbG9jYWwgZWRpdHMgYXJlIHJlcGxhY2VkLgojCiMgICBuZXRyb290LW1vdW50IFtWRVJTSU9OX0lEXSAgIG1vdW50IFZFUlNJT05fSUQgKGRlZmF1bHQ6IC9ldGMvbmV0cm9vdC9hc3NpZ25lZCk7IGlmIGFub3RoZXIKIyAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgdmVyc2lvbiBpcyBtb3VudGVkLCBzdG9wIHdoYXQgcnVucyBpbiB0aGUgY2hyb290LCB1bm1vdW50IGl0IGFuZAojICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICBtb3VudCB0aGUgbmV3IG9uZSAodGhlIHNhZmUgc3dpdGNoKS4gUHJpbnRzICJjaGFuZ2VkIiBvcgojICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAidW5jaGFuZ2VkIiBvbiBzdGRvdXQuCiMgICBuZXRyb290LW1vdW50IC0tdW1vdW50ICAgICAgIHN0b3Agd2hhdCBydW5zIGluIHRoZSBjaHJvb3QgYW5kIHVubW91bnQgZXZlcnl0aGluZy4KIyAgIG5ldHJvb3QtbW91bnQgLS1zdGF0dXMgICAgICAgSlNPTjogYXNzaWduZWQsIG1vdW50ZWQsIHJvb3QsIHNoYXJlZCwgaW1hZ2UsIHNlcnZlci4KIwojIExheW91dDogdGhlIGltYWdlJ3MgZXhwb3J0IGlzIG1vdW50ZWQgUkVBRC1PTkxZIGF0ICRTSEFSRUQ7IHRoZSB2ZXJzaW9uIGl0c2VsZiBpcyBtb3VudGVkCiMgb3ZlciAkU0hBUkVEL3ZlcnNpb25zLzxpZD4sIHJlYWQtb25seSB3aXRoIHRoZSBjYWNoaW5nIGFuIGltbXV0YWJsZSB0cmVlIGFsbG93cwojICgkVkVSU0lPTl9PUFRJT05TOiB0ZW1wbGF0ZXMvX2JvYXJkLmoyIHNheXMgd2h5IGVhY2ggaXMgc2FmZSB0aGVyZSBhbmQgb25seSB0aGVyZSk7IHRoZSBjaHJvb3QKIyByb290ICRST09UIGlzIGFuIG92ZXJsYXlmcyB3aG9zZSBsb3dlciBsYXllciBpcyB0aGF0IG1vdW50IGFuZCB3aG9zZSB3cml0YWJsZSBsYXllciBpcyB0aGlzCiMgYm9hcmQncyBvd24gKCRMQVlFUl9ESVIvPGlkPiBvbiB0aGUgYm9hcmQncyBkaXNrLCBvciB0bXBmcyksIHNvIGJvYXJkcyBuZXZlciBzZWUgZWFjaCBvdGhlcidzCiMgd3JpdGVzIGFuZCBub3RoaW5nIGEgYm9hcmQgd3JpdGVzIHJlYWNoZXMgdGhlIHNlcnZlci4Kc2V0IC1ldW8gcGlwZWZhaWwKClNFUlZFUj0xMC43Ny4wLjIKRVhQT1JUPS9zcnYvbmV0cm9vdC9yYXNwYmlhbgpJTUFHRT1yYXNwYmlhbgpPUFRJT05TPXZlcnM9NC4xLHByb3RvPXRjcCxoYXJkLHRpbWVvPTYwMCxyZXRyYW5zPTIscnNpemU9MTA0ODU3Nix3c2l6ZT0xMDQ4NTc2LHJvClZFUlNJT05fT1BUSU9OUz12ZXJzPTQuMSxwcm90bz10Y3AsaGFyZCx0aW1lbz02MDAscmV0cmFucz0yLHJzaXplPTEwNDg1NzYsd3NpemU9MTA0ODU3Nixybyxub2N0byxhY3RpbWVvPTg2NDAwLGxvb2t1cGNhY2hlPWFsbApMQVlFUj1kaXNrCkxBWUVSX0RJUj0vdmFyL2xpYi9uZXRyb290L2xheWVycwpSRVRSSUVTPTEwClJFVFJZX0RFTEFZPTMKQVRURU1QVF9USU1FT1VUPTIwClNUT1BfVElNRU9VVD0xMAoKUlVOPS9ydW4vbmV0cm9vdApTSEFSRUQ9JFJVTi9zaGFyZWQKUk9PVD0kUlVOL3Jvb3QKTU9VTlRFRD0kUlVOL21vdW50ZWQKQVNTSUdORUQ9L2V0Yy9uZXRyb290L2Fzc2lnbmVkCgpsb2coKSB7IGVjaG8gIm5ldHJvb3QtbW91bnQ6ICQqIiA+JjI7IH0KZGllKCkgeyBsb2cgIkZBSUxFRDogJCoiOyBleGl0IDE7IH0KCiMgV2hldGhlciBESVIgaXMgYSBtb3VudCBwb2ludCwgcmVhZCBmcm9tIHRoZSBrZXJuZWwncyBtb3VudCB0YWJsZSBhbmQgbmV2ZXIgYnkgc3RhdCgyKTogYQojIGJvYXJkIG1vdmVkIHRvIGFub3RoZXIgTkZTIHNlcnZlciBpcyBkcm9wcGVkIGZyb20gaXRzIG9sZCBzZXJ2ZXIncyBleHBvcnRzLCBhbmQgZXZlcnkgc3RhdCBvZgojIHRoYXQgc2VydmVyJ3MgbW91bnRzIHRoZW4gZmFpbHMgd2l0aCBFU1RBTEUsIHdoaWNoIGBtb3VudHBvaW50YCB0YWtlcyBmb3IgIm5vdCBhIG1vdW50IHBvaW50IjsKIyB0aGUgc3RhbGUgbW91bnQgd2FzIG5ldmVyIHVubW91bnRlZCBhbmQgdGhlIG5leHQgbWtkaXIgb3IgbW91bnQgb3ZlciBpdCBmYWlsZWQgKGJlbmNoL1JFQURNRS5tZCwKIyAiQSBib2FyZCBtb3ZlZCBiZXR3ZWVuIHR3byBsaXZlIHNlcnZlcnMiKS4gbW91bnRpbmZvJ3MgZmllbGQgNSBpcyB0aGUgbW91bnQgcG9pbnQuCm1vdW50ZWRfYXQoKSB7CiAgICBsb2NhbCBfaWQgX3BhcmVudCBfZGV2IF9yb290IHBvaW50IF9yZXN0CiAgICB3aGlsZSByZWFkIC1yIF9pZCBfcGFyZW50IF9kZXYgX3Jvb3QgcG9pbnQgX3Jlc3Q7IGRvCiAgICAgICAgWyAiJHBvaW50IiA9ICIkMSIgXSAmJiByZXR1cm4gMAogICAgZG9uZSA8L3Byb2Mvc2VsZi9tb3VudGluZm8KICAgIHJldHVybiAxCn0KCm1vdW50ZWRfdmVyc2lvbigpIHsKICAgIGlmIG1vdW50ZWRfYXQgIiRST09UIiAmJiBbIC1zICIkTU9VTlRFRCIgXTsgdGhlbiBjYXQgIiRNT1VOVEVEIjsgZmkKfQoKIyBFdmVyeSBwcm9jZXNzIHdob3NlIHJvb3QgZGlyZWN0b3J5IGlzIGluc2lkZSB0aGUgY2hyb290IChzdGFydGVkIGJ5IG5ldHJvb3QtY2hyb290LCBieSBTU0gKIyBzZXNzaW9ucywgYnkgYW55dGhpbmcpOiBURVJNLCB3YWl0LCB0aGVuIEtJTEwsIHNvIHRoZSB1bm1vdW50IGNhbm5vdCBmYWlsIHdpdGggRUJVU1kuCiMgT25lIGZpbmQgZm9yIGFsbCBwcm9jZXNzZXM6IGEgcmVhZGxpbmsgcGVyIHByb2Nlc3MgY29zdCB+Mi41IHMgb24gYW4gZW11bGF0ZWQgYm9hcmQuIEEgcHJvY2VzcwojIHRoYXQgZXhpdHMgbWVhbndoaWxlIG1ha2VzIGZpbmQgY29tcGxhaW47IHRoYXQgaXMgbm90IGFuIGVycm9yIGhlcmUuCmNocm9vdF9waWRzKCkgewogICAgbG9jYWwgcAogICAgeyBmaW5kIC9wcm9jL1swLTldKi9yb290IC1tYXhkZXB0aCAwIFwoIC1sbmFtZSAiJFJPT1QiIC1vIC1sbmFtZSAiJFJPT1QvKiIgXCkgXAogICAgICAgIC1wcmludGYgJyVoXG4nIDI+L2Rldi9udWxsIHx8IHRydWU7IH0gfCB3aGlsZSByZWFkIC1yIHA7IGRvIGVjaG8gIiR7cCMvcHJvYy99IjsgZG9uZQp9CgpzdG9wX2Nocm9vdCgpIHsKICAgIGxvY2FsIHBpZHMgd2FpdGVkPTAKICAgIHBpZHM9JChjaHJvb3RfcGlkcykKICAgIFsgLXogIiRwaWRzIiBdICYmIHJldHVybiAwCiAgICBsb2cgInN0b3BwaW5nIHByb2Nlc3NlcyBpbiB0aGUgY2hyb290OiAkKGVjaG8gJHBpZHMpIgogICAga2lsbCAtVEVSTSAkcGlkcyAyPi9kZXYvbnVsbCB8fCB0cnVlCiAgICB3aGlsZSBbIC1uICIkKGNocm9vdF9waWRzKSIgXSAmJiBbICIkd2FpdGVkIiAtbHQgIiRTVE9QX1RJTUVPVVQiIF07IGRvCiAgICAgICAgc2xlZXAgMQogICAgICAgIHdhaXRlZD0kKCh3YWl0ZWQgKyAxKSkKICAgIGRvbmUKICAgIHBpZHM9JChjaHJvb3RfcGlkcykKICAgIGlmIFsgLW4gIiRwaWRzIiBdOyB0aGVuCiAgICAgICAgbG9nICJraWxsaW5nIHByb2Nlc3NlcyB0aGF0IGlnbm9yZWQgU0lHVEVSTTogJChlY2hvICRwaWRzKSIKICAgICAgICBraWxsIC1LSUxMICRwaWRzIDI+L2Rldi9udWxsIHx8IHRydWUKICAgICAgICBzbGVlcCAxCiAgICBmaQp9Cgp1bW91bnRfYWxsKCkgewogICAgc3RvcF9jaHJvb3QKICAgIHJtIC1mICIkTU9VTlRFRCIKICAgICMgLWMgKC0tbm8tY2Fub25pY2FsaXplKTogdW1vdW50KDgpIHN0YXRzIG5vIHBhdGgsIHNvIGEgc3RhbGUgTkZTIG1vdW50IChFU1RBTEUpIGdvZXMgdG9vCiAgICBpZiBtb3VudGVkX2F0ICIkUk9PVCI7IHRoZW4gdW1vdW50IC1jIC1SICIkUk9PVCIgfHwgZGllICJjYW5ub3QgdW5tb3VudCAkUk9PVCI7IGZpCiAgICBpZiBtb3VudGVkX2F0ICIkUlVOL2xheWVyIjsgdGhlbiB1bW91bnQgLWMgIiRSVU4vbGF5ZXIiOyBmaQogICAgIyAtUjogdGhlIHZlcnNpb24ncyBvd24gbW91bnQgdW5kZXIgaXQgZmlyc3QKICAgIGlmIG1vdW50ZWRfYXQgIiRTSEFSRUQiOyB0aGVuIHVtb3VudCAtYyAtUiAiJFNIQVJFRCIgfHwgdW1vdW50IC1jIC1sICIkU0hBUkVEIjsgZmkKfQoKIyBuZnNfbW91bnQgUEFUSCBESVIgT1BUSU9OUzogbW91bnQgJFNFUlZFUjpQQVRIIG9uIERJUiwgcmV0cnlpbmcgd2hpbGUgdGhlIHNlcnZlciBpcyBub3QgdXAuCm5mc19tb3VudCgpIHsKICAgIGxvY2FsIHBhdGg9JDEgZGlyPSQyIG9wdGlvbnM9JDMgdHJ5PTEgZXJyCiAgICB3aGlsZSA6OyBkbwogICAgICAgIGlmIGVycj0kKHRpbWVvdXQgIiRBVFRFTVBUX1RJTUVPVVQiIG1vdW50IC10IG5mcyAtbyAiJG9wdGlvbnMiICIkU0VSVkVSOiRwYXRoIiAiJGRpciIgMj4mMSk7IHRoZW4KICAgICAgICAgICAgbG9nICJtb3VudGVkICRTRVJWRVI6JHBhdGggKHRyeSAkdHJ5LCAkb3B0aW9ucykiCiAgICAgICAgICAgIHJldHVybiAwCiAgICAgICAgZmkKICAgICAgICBsb2cgInRyeSAkdHJ5LyRSRVRSSUVTOiBtb3VudCAkU0VSVkVSOiRwYXRoIGZhaWxlZDogJHtlcnI6LXRpbWVkIG91dCBhZnRlciAke0FUVEVNUFRfVElNRU9VVH1zfSIKICAgICAgICBbICIkdHJ5IiAtZ2UgIiRSRVRSSUVTIiBdICYmIGRpZSAiY2Fubm90IG1vdW50ICRTRVJWRVI6JHBhdGggYWZ0ZXIgJFJFVFJJRVMgdHJpZXM7IGlzIHRoZSBORlMgc2VydmVyIHVwIGFuZCBkb2VzIGl0IGV4cG9ydCB0byB0aGlzIGJvYXJkPyAobmV0cm9vdCBwcm92aXNpb24pIgogICAgICAgIHRyeT0kKCh0cnkgKyAxKSkKICAgICAgICBzbGVlcCAiJFJFVFJZX0RFTEFZIgogICAgZG9uZQp9Cgptb3VudF9zaGFyZWQoKSB7CiAgICBta2RpciAtcCAiJFNIQVJFRCIKICAgIG1vdW50ZWRfYXQgIiRTSEFSRUQiICYmIHJldHVybiAwCiAgICBbIC1kIC9zeXMvbW9kdWxlL25mcyBdIHx8IG1vZHByb2JlIC1xIG5mcyAyPi9kZXYvbnVsbCB8fCB0cnVlICAjIGxvYWRlZDogbm8gZXhlYwogICAgbmZzX21vdW50ICIkRVhQT1JUIiAiJFNIQVJFRCIgIiRPUFRJT05TIgp9CgojIEJpbmQgdGhlIGJvYXJkJ3Mgb3duIGZpbGUgb3ZlciB0aGUgaW1hZ2UncywgcmVhZC1vbmx5LCBzbyB0aGUgY2hyb290IHNlZXMgdGhpcyBib2FyZCdzCiMgaWRlbnRpdHkgYW5kIGNhbm5vdCBjaGFuZ2UgaXQ7IHRoZSBmaWxlIGlzIGNyZWF0ZWQgaW4gdGhlIHdyaXRhYmxlIGxheWVyIHdoZW4gdGhlIGltYWdlIGhhcwojIG5vbmUgKG9yIGEgZGFuZ2xpbmcgc3ltbGluaywgYXMgY29udGFpbmVyIGltYWdlcyBvZnRlbiBoYXZlIGZvciByZXNvbHYuY29uZikuCmJpbmRfZmlsZSgpIHsKICAgIGxvY2FsIHNyYz0kMSBkc3Q9JFJPT1QkMgogICAgWyAtZSAiJHNyYyIgXSB8fCByZXR1cm4gMAogICAgaWYgWyAtTCAiJGRzdCIgXSB8fCBbICEgLWYgIiRkc3QiIF07IHRoZW4KICAgICAgICBybSAtZiAiJGRzdCIKICAgICAgICA6ID4iJGRzdCIKICAgIGZpCiAgICAjIHV0aWwtbGludXggPj0gMi4yNyByZW1vdW50cyBpdCByZWFkLW9ubHkgaXRzZWxmLCBhcyB0aGUgc2Vjb25kIGNhbGwgZGlkCiAgICBtb3VudCAtLWJpbmQgLW8gcm8gIiRzcmMiICIkZHN0Igp9Cgptb3VudF92ZXJzaW9uKCkgewogICAgbG9jYWwgdmVyc2lvbj0kMSBsb3dlciB1cHBlciB3b3JrCiAgICBtb3VudF9zaGFyZWQKICAgIGxvd2VyPSRTSEFSRUQvdmVyc2lvbnMvJHZlcnNpb24KICAgIFsgLWQgIiRsb3dlciIgXSB8fCBkaWUgInZlcnNpb24gJHZlcnNpb24gaXMgbm90IGV4cG9ydGVkIGluICRTRVJWRVI6JEVYUE9SVCAoc2VlIG5ldHJvb3QgdmVyc2lvbnMpIgogICAgIyBJdHMgb3duIG1vdW50OiBhIHN1cGVyYmxvY2sgb2YgaXRzIG93biB3aXRoIHRoZSBpbW11dGFibGUgcHJvZmlsZSAodGhlIGV4cG9ydCdzIHN0YXlzIGFzIGl0CiAgICAjIGlzKS4gUmlnaHQgYWZ0ZXIgdGhlIGV4cG9ydCdzIG1vdW50IHN1Y2NlZWRlZCwgc28gdGhlIHJldHJpZXMgYXJlIGZvciB0aGUgcmFyZSBoaWNjdXAuCiAgICBtb3VudGVkX2F0ICIkbG93ZXIiIHx8IG5mc19tb3VudCAiJEVYUE9SVC92ZXJzaW9ucy8kdmVyc2lvbiIgIiRsb3dlciIgIiRWRVJTSU9OX09QVElPTlMiCiAgICBpZiBbICIkTEFZRVIiID0gdG1wZnMgXTsgdGhlbgogICAgICAgIG1rZGlyIC1wICIkUlVOL2xheWVyIgogICAgICAgIG1vdW50ZWRfYXQgIiRSVU4vbGF5ZXIiIHx8IG1vdW50IC10IHRtcGZzIC1vIG1vZGU9MDc1NSBuZXRyb290LWxheWVyICIkUlVOL2xheWVyIgogICAgICAgIHVwcGVyPSRSVU4vbGF5ZXIvdXBwZXIKICAgICAgICB3b3JrPSRSVU4vbGF5ZXIvd29yawogICAgZWxzZQogICAgICAgIHVwcGVyPSRMQVlFUl9ESVIvJHZlcnNpb24vdXBwZXIKICAgICAgICB3b3JrPSRMQVlFUl9ESVIvJHZlcnNpb24vd29yawogICAgZmkKICAgIG1rZGlyIC1wICIkdXBwZXIiICIkd29yayIgIiRST09UIgogICAgWyAtZCAvc3lzL21vZHVsZS9vdmVybGF5IF0gfHwgbW9kcHJvYmUgLXEgb3ZlcmxheSAyPi9kZXYvbnVsbCB8fCB0cnVlCiAgICBtb3VudCAtdCBvdmVybGF5IG5ldHJvb3QgLW8gImxvd2VyZGlyPSRsb3dlcix1cHBlcmRpcj0kdXBwZXIsd29ya2Rpcj0kd29yayIgIiRST09UIiBcCiAgICAgICAgfHwgZGllICJjYW5ub3QgbW91bnQgdGhlIG92ZXJsYXkgb2YgJHZlcnNpb24gb24gJFJPT1QiCiAgICBsb2NhbCBkCiAgICBta2RpciAtcCAiJFJPT1QvZGV2IiAiJFJPT1QvcHJvYyIgIiRST09UL3N5cyIgIiRST09UL3J1biIgIiRST09UL2V0YyIKICAgIGZvciBkIGluIGRldiBwcm9jIHN5czsgZG8KICAgICAgICAjIHJzbGF2ZTogdW5tb3VudGluZyB0aGUgY2hyb290IG11c3QgbmV2ZXIgcHJvcGFnYXRlIGJhY2sgdG8gdGhlIGJvYXJkJ3Mgb3duIG1vdW50cwogICAgICAgICMgKG9uZSBtb3VudCg4KSBjYWxsOiB0aGUgYmluZCwgdGhlbiB0aGUgcHJvcGFnYXRpb24gY2hhbmdlLCBhcyB0d28gc2VwYXJhdGUgb25lcyBkaWQpCiAgICAgICAgbW91bnQgLS1yYmluZCAtLW1ha2UtcnNsYXZlICIvJGQiICIkUk9PVC8kZCIKICAgIGRvbmUKICAgIG1vdW50IC10IHRtcGZzIC1vIG1vZGU9MDc1NSxub3N1aWQsbm9kZXYgbmV0cm9vdC1ydW4gIiRST09UL3J1biIKICAgIG1rZGlyIC1wICIkUk9PVC9ydW4vbmV0cm9vdCIKICAgIGVjaG8gIiR2ZXJzaW9uIiA+IiRST09UL3J1bi9uZXRyb290L3ZlcnNpb24iCiAgICAjIFRoZSBtYW5pZmVzdCBzdGF5cyBvbiB0aGUgc2VydmVyIChyZWFkLW9ubHkgYmluZCwgbm8gY29weSBvZiBhIG11bHRpLU1CIGZpbGUpLgogICAgaWYgWyAtZiAiJFNIQVJFRC92ZXJzaW9ucy8kdmVyc2lvbi5qc29uIiBdOyB0aGVuCiAgICAgICAgOiA+IiRST09UL3J1bi9uZXRyb290L21hbmlmZXN0Lmpzb24iCiAgICAgICAgbW91bnQgLS1iaW5kICIkU0hBUkVEL3ZlcnNpb25zLyR2ZXJzaW9uLmpzb24iICIkUk9PVC9ydW4vbmV0cm9vdC9tYW5pZmVzdC5qc29uIgogICAgZmkKICAgIGJpbmRfZmlsZSAvZXRjL2hvc3RuYW1lIC9ldGMvaG9zdG5hbWUKICAgIGJpbmRfZmlsZSAvZXRjL21hY2hpbmUtaWQgL2V0Yy9tYWNoaW5lLWlkCiAgICBiaW5kX2ZpbGUgIiQocmVhZGxpbmsgLWYgL2V0Yy9yZXNvbHYuY29uZikiIC9ldGMvcmVzb2x2LmNvbmYKICAgIGVjaG8gIiR2ZXJzaW9uIiA+IiRNT1VOVEVEIgp9CgpzdGF0dXMoKSB7CiAgICBsb2NhbCBhc3NpZ25lZD0iIiBtb3VudGVkCiAgICBbIC1zICIkQVNTSUdORUQiIF0gJiYgYXNzaWduZWQ9JChjYXQgIiRBU1NJR05FRCIpCiAgICBtb3VudGVkPSQobW91bnRlZF92ZXJzaW9uKQogICAgcHJpbnRmICd7ImFzc2lnbmVkIjogIiVzIiwgIm1vdW50ZWQiOiAiJXMiLCAicm9vdCI6ICIlcyIsICJzaGFyZWQiOiAiJXMiLCAiaW1hZ2UiOiAiJXMiLCAic2VydmVyIjogIiVzIn1cbicgXAogICAgICAgICIkYXNzaWduZWQiICIkbW91bnRlZCIgIiRST09UIiAiJFNIQVJFRCIgIiRJTUFHRSIgIiRTRVJWRVI6JEVYUE9SVCIKfQoKY2FzZSAiJHsxOi19IiBpbgotLXN0YXR1cykgc3RhdHVzOyBleGl0IDAgOzsKLS11bW91bnQpIHVtb3VudF9hbGw7IGV4aXQgMCA7OwotaCB8IC0taGVscCkgc2VkIC1uICcyLDExcCcgIiQwIjsgZXhpdCAwIDs7Ci0qKSBkaWUgInVua25vd24gb3B0aW9uICQxIChzZWUgLS1oZWxwKSIgOzsKZXNhYwoKdmVyc2lvbj0kezE6LX0KaWYgWyAteiAiJHZlcnNpb24iIF07IHRoZW4KICAgIFsgLXMgIiRBU1NJR05FRCIgXSB8fCBkaWUgIm5vIHZlcnNpb24gYXNzaWduZWQgaW4gJEFTU0lHTkVEIChydW4gbmV0cm9vdCBwcm92aXNpb24pIgogICAgdmVyc2lvbj0kKGNhdCAiJEFTU0lHTkVEIikKZmkKY2FzZSAiJHZlcnNpb24iIGluICpbITAtOWEtZl0qIHwgIiIpIGRpZSAiYmFkIHZlcnNpb24gaWQgJyR2ZXJzaW9uJyIgOzsgZXNhYwoKIyBUaGUgY2hyb290IGlzIHdob2xlIHdoZW4gaXRzIHJvb3QgYW5kIGV2ZXJ5IGJpbmQgaXQgbmVlZHMgYXJlIG1vdW50ZWQ7IGEgcm9vdCB0aGF0IGxvc3Qgb25lCiMgKHNvbWVvbmUgdW5tb3VudGVkIC9kZXYsIGEgY3Jhc2ggaGFsZi13YXkgdGhyb3VnaCBhIG1vdW50KSBpcyByZW1vdW50ZWQsIG5ldmVyIGxlZnQgYnJva2VuLgp3aG9sZSgpIHsKICAgIGxvY2FsIGQKICAgIG1vdW50ZWRfYXQgIiRST09UIiB8fCByZXR1cm4gMQogICAgZm9yIGQgaW4gZGV2IHByb2Mgc3lzIHJ1bjsgZG8gbW91bnRlZF9hdCAiJFJPT1QvJGQiIHx8IHJldHVybiAxOyBkb25lCn0KCmN1cnJlbnQ9JChtb3VudGVkX3ZlcnNpb24pCmlmIFsgIiRjdXJyZW50IiA9ICIkdmVyc2lvbiIgXTsgdGhlbgogICAgaWYgd2hvbGU7IHRoZW4KICAgICAgICBlY2hvIHVuY2hhbmdlZAogICAgICAgIGV4aXQgMAogICAgZmkKICAgIGxvZyAidmVyc2lvbiAkdmVyc2lvbiBpcyBtb3VudGVkIGJ1dCBpdHMgY2hyb290IGlzIG5vdCB3aG9sZTsgcmVtb3VudGluZyBpdCIKZmkKaWYgWyAtbiAiJGN1cnJlbnQiIF0gfHwgbW91bnRlZF9hdCAiJFJPT1QiIHx8IG1vdW50ZWRfYXQgIiRTSEFSRUQiOyB0aGVuCiAgICBsb2cgInN3aXRjaGluZyBmcm9tICR7Y3VycmVudDotYSBwYXJ0aWFsIG1vdW50fSB0byAkdmVyc2lvbiIKICAgIHVtb3VudF9hbGwKZmkKbW91bnRfdmVyc2lvbiAiJHZlcnNpb24iCmxvZyAidmVyc2lvbiAkdmVyc2lvbiBtb3VudGVkIG9uICRST09UIgplY2hvIGNoYW5nZWQK 33a188e4ee068c4135b2defbadfff8818b90af10dff411c0a3b26d83911118ac && scripts=1
put /usr/local/sbin/netroot-chroot 755 IyEvYmluL3NoCiMgbmV0cm9vdC1jaHJvb3QgQ01ELi4uOiBydW4gQ01EIChhbiBhYnNvbHV0ZSBwYXRoIGluc2lkZSB0aGUgaW1hZ2UpIGluIHRoaXMgYm9hcmQncyBuZXRyb290CiMgY2hyb290LCB3aXRoIGEgY2xlYW4gZW52aXJvbm1lbnQuIFdpdGhvdXQgQ01EOiBhIGxvZ2luIHNoZWxsLiBNYW5hZ2VkIGJ5IG5ldHJvb3QgZm9yCiMgcGktMDEuCiMgRXZlcnkgc21va2UgY2hlY2sgcnVucyB0aHJvdWdoIHRoaXMgc2NyaXB0LCBzbyBpdCBpcyBwbGFpbiBzaCBhbmQgZm9ya3Mgbm90aGluZyBiZWZvcmUgdGhlCiMgY2hyb290OiBvbiBhbiBlbXVsYXRlZCBib2FyZCwgYmFzaCBhbmQgYSBgbW91bnRwb2ludGAvYGNhdGAgZXhlYyBjb3N0IH44NSBtcyBwZXIgY29tbWFuZC4Kc2V0IC1ldQpST09UPS9ydW4vbmV0cm9vdC9yb290ClZFUlNJT049CmlmIFsgLXIgL3J1bi9uZXRyb290L21vdW50ZWQgXTsgdGhlbgogICAgcmVhZCAtciBWRVJTSU9OIDwgL3J1bi9uZXRyb290L21vdW50ZWQgfHwgdHJ1ZQpmaQpNT1VOVEVEPQp3aGlsZSByZWFkIC1yIF9pZCBfcGFyZW50IF9kZXYgX3Jvb3QgcG9pbnQgX3Jlc3Q7IGRvICAjIGZpZWxkIDUgb2YgbW91bnRpbmZvOiB0aGUgbW91bnQgcG9pbnQKICAgIGlmIFsgIiRwb2ludCIgPSAiJFJPT1QiIF07IHRoZW4KICAgICAgICBNT1VOVEVEPTEKICAgICAgICBicmVhawogICAgZmkKZG9uZSA8IC9wcm9jL3NlbGYvbW91bnRpbmZvCmlmIFsgLXogIiRNT1VOVEVEIiBdIHx8IFsgLXogIiRWRVJTSU9OIiBdOyB0aGVuCiAgICBlY2hvICJuZXRyb290LWNocm9vdDogbm8gdmVyc2lvbiBtb3VudGVkIG9uICRST09UIChzeXN0ZW1jdGwgc3RhdHVzIG5ldHJvb3QtbW91bnQpIiA+JjIKICAgIGV4aXQgMQpmaQpbICIkIyIgLWd0IDAgXSB8fCBzZXQgLS0gL2Jpbi9zaCAtbApleGVjIC91c3Ivc2Jpbi9jaHJvb3QgIiRST09UIiAvdXNyL2Jpbi9lbnYgLWkgXAogICAgSE9NRT0vcm9vdCBcCiAgICBQQVRIPS91c3IvbG9jYWwvc2JpbjovdXNyL2xvY2FsL2JpbjovdXNyL3NiaW46L3Vzci9iaW46L3NiaW46L2JpbiBcCiAgICBMQU5HPUMuVVRGLTggXAogICAgVEVSTT0iJHtURVJNOi1kdW1ifSIgXAogICAgTkVUUk9PVF9WRVJTSU9OPSIkVkVSU0lPTiIgXAogICAgIiRAIgo= cf522b182f5b76b753498b69a0c05e15e60f8361bc57c0f96a7985f465e8f7fe && scripts=1
unit=0
put /etc/systemd/system/netroot-mount.service 644 IyBNYW5hZ2VkIGJ5IG5ldHJvb3QgKHJvbGUgbmV0cm9vdF9ib2FyZCkgZm9yIHBpLTAxLgpbVW5pdF0KRGVzY3JpcHRpb249bmV0cm9vdDogbW91bnQgdGhlIGFzc2lnbmVkIHZlcnNpb24gYW5kIHByZXBhcmUgaXRzIGNocm9vdApEb2N1bWVudGF0aW9uPW1hbjpuZnMoNSkgZmlsZTovLy91c3IvbG9jYWwvc2Jpbi9uZXRyb290LW1vdW50CldhbnRzPW5ldHdvcmstb25saW5lLnRhcmdldApBZnRlcj1uZXR3b3JrLW9ubGluZS50YXJnZXQKQmVmb3JlPW11bHRpLXVzZXIudGFyZ2V0CgpbU2VydmljZV0KVHlwZT1vbmVzaG90ClJlbWFpbkFmdGVyRXhpdD15ZXMKIyBuZXRyb290LW1vdW50IHJldHJpZXMgMTAgdGltZXMgaXRzZWxmIGFuZCBsb2dzIGVhY2ggZmFpbHVyZTsKIyB0aGUgc3RhcnQgdGltZW91dCBib3VuZHMgdGhlIHdob2xlIGF0dGVtcHQgc28gYSBtaXNzaW5nIHNlcnZlciBjYW5ub3QgaGFuZyB0aGUgYm9vdC4KRXhlY1N0YXJ0PS91c3IvbG9jYWwvc2Jpbi9uZXRyb290LW1vdW50CkV4ZWNTdG9wPS91c3IvbG9jYWwvc2Jpbi9uZXRyb290LW1vdW50IC0tdW1vdW50ClRpbWVvdXRTdGFydFNlYz0zMDAKVGltZW91dFN0b3BTZWM9NDAKU3lzbG9nSWRlbnRpZmllcj1uZXRyb290LW1vdW50CgpbSW5zdGFsbF0KV2FudGVkQnk9bXVsdGktdXNlci50YXJnZXQK c5ff52f3ec439db2950e45eee623f16171bc4a2df680d99b2772e2a95bbe4dbe && unit=1
[ "$PREPARE" = 1 ] || put /etc/netroot/assigned 644 PGN1cnJlbnQ+Cg== ee757759828113e03fcb3c53769ad58f0413ab5311bb7dc464491ed8ebaebcbb
if [ "$SET_HOSTNAME" = 1 ]; then
    put /etc/hostname 644 cGktMDEK 14b4732cc176eca199895886e47fe835f20d52998049f854eff5b6a267b62969
    current_name=""
    read -r current_name </proc/sys/kernel/hostname  # what `hostname` prints
    if [ "$current_name" != "$NAME" ]; then
        [ "$CHECK" = 1 ] || hostname "$NAME"
        changed "hostname $NAME"
    fi
fi
# Identity: the board's own machine-id, bound into the chroot by netroot-mount.
if [ ! -s /etc/machine-id ]; then
    [ "$CHECK" = 1 ] || systemd-machine-id-setup >&2
    changed "machine-id"
fi

if [ "$CHECK" = 1 ]; then
    if [ "$mounted_before" != "$VERSION" ] || [ "$scripts" = 1 ]; then
        changed "would mount $VERSION (mounted: ${mounted_before:-nothing})"
    fi
    echo "mounted: $mounted_before"
    exit 0
fi
# A new unit is read by a reload, or by the reboot that follows (DEFER: no reload now).
if [ "$unit" = 1 ] && [ "$DEFER" = 0 ]; then systemctl daemon-reload; fi
if [ "$PREPARE" = 1 ]; then
    echo "mounted: $mounted_before"
    exit 0
fi
# Enabled = the link `systemctl enable` makes for WantedBy=multi-user.target (a test, where
# `systemctl is-enabled` cost ~0.5 s on an emulated board). --no-reload: the link is for the
# next boot (this run starts the unit itself), and the reload above, when the unit changed, is
# the one it needs; each reload costs ~2.4 s on an emulated board.
if [ ! -L /etc/systemd/system/multi-user.target.wants/netroot-mount.service ]; then
    systemctl enable -q --no-reload netroot-mount.service 2>&1 || fail "cannot enable netroot-mount.service"
    changed "enabled netroot-mount.service"
fi
# Mounted with these scripts: nothing to do. Otherwise restart, the safe switch: ExecStop stops
# what runs in the chroot and unmounts, ExecStart mounts the assigned version.
if [ "$mounted_before" = "$VERSION" ] && [ "$scripts" = 0 ] && systemctl is-active -q netroot-mount.service; then
    # netroot-mount remounts a chroot that lost a bind (/dev, /proc, /sys, /run) and says so.
    repaired=$(/usr/local/sbin/netroot-mount "$VERSION") || fail "$NAME: cannot repair the chroot of $VERSION"
    [ "$repaired" = unchanged ] || changed "remounted $VERSION: its chroot had lost a bind"
elif [ "$DEFER" = 1 ]; then
    changed "$VERSION assigned: mounted by the reboot (mounted now: ${mounted_before:-nothing})"
    echo "mounted: $mounted_before"
    exit 0
else
    # A unit written by an earlier run whose reboot never came (DEFER, PREPARE) is not read yet.
    if [ "$unit" = 0 ] && [ "$(systemctl show -P NeedDaemonReload netroot-mount.service 2>/dev/null)" = yes ]; then
        systemctl daemon-reload
    fi
    if ! systemctl restart netroot-mount.service 2>/dev/null; then
        journalctl -u netroot-mount.service -n 25 --no-pager -o cat 2>/dev/null | grep 'netroot-mount' >&2
        fail "$NAME: netroot-mount.service failed to mount $VERSION (journalctl -u netroot-mount)"
    fi
    changed "mounted $VERSION (was: ${mounted_before:-nothing})"
fi
mounted=""
{ read -r mounted </run/netroot/mounted; } 2>/dev/null
[ "$mounted" = "$VERSION" ] || fail "$NAME: $VERSION assigned but ${mounted:-nothing} mounted"
echo "mounted: $mounted"
