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
put /usr/local/sbin/netroot-mount 755 IyEvYmluL2Jhc2gKIyBuZXRyb290LW1vdW50OiBtb3VudCB0aGlzIGJvYXJkJ3MgYXNzaWduZWQgbmV0cm9vdCB2ZXJzaW9uIGFuZCBwcmVwYXJlIGl0cyBjaHJvb3QuCiMgTWFuYWdlZCBieSBuZXRyb290IChyb2xlIG5ldHJvb3RfYm9hcmQpIGZvciBwaS0wMTsgbG9jYWwgZWRpdHMgYXJlIHJlcGxhY2VkLgojCiMgICBuZXRyb290LW1vdW50IFtWRVJTSU9OX0lEXSAgIG1vdW50IFZFUlNJT05fSUQgKGRlZmF1bHQ6IC9ldGMvbmV0cm9vdC9hc3NpZ25lZCk7IGlmIGFub3RoZXIKIyAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgdmVyc2lvbiBpcyBtb3VudGVkLCBzdG9wIHdoYXQgcnVucyBpbiB0aGUgY2hyb290LCB1bm1vdW50IGl0IGFuZAojICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICBtb3VudCB0aGUgbmV3IG9uZSAodGhlIHNhZmUgc3dpdGNoKS4gUHJpbnRzICJjaGFuZ2VkIiBvcgojICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAidW5jaGFuZ2VkIiBvbiBzdGRvdXQuCiMgICBuZXRyb290LW1vdW50IC0tdW1vdW50ICAgICAgIHN0b3Agd2hhdCBydW5zIGluIHRoZSBjaHJvb3QgYW5kIHVubW91bnQgZXZlcnl0aGluZy4KIyAgIG5ldHJvb3QtbW91bnQgLS1zdGF0dXMgICAgICAgSlNPTjogYXNzaWduZWQsIG1vdW50ZWQsIHJvb3QsIHNoYXJlZCwgaW1hZ2UsIHNlcnZlci4KIwojIExheW91dDogdGhlIGltYWdlJ3MgZXhwb3J0IGlzIG1vdW50ZWQgUkVBRC1PTkxZIGF0ICRTSEFSRUQ7IHRoZSB2ZXJzaW9uIGl0c2VsZiBpcyBtb3VudGVkCiMgb3ZlciAkU0hBUkVEL3ZlcnNpb25zLzxpZD4sIHJlYWQtb25seSB3aXRoIHRoZSBjYWNoaW5nIGFuIGltbXV0YWJsZSB0cmVlIGFsbG93cwojICgkVkVSU0lPTl9PUFRJT05TOiB0ZW1wbGF0ZXMvX2JvYXJkLmoyIHNheXMgd2h5IGVhY2ggaXMgc2FmZSB0aGVyZSBhbmQgb25seSB0aGVyZSk7IHRoZSBjaHJvb3QKIyByb290ICRST09UIGlzIGFuIG92ZXJsYXlmcyB3aG9zZSBsb3dlciBsYXllciBpcyB0aGF0IG1vdW50IGFuZCB3aG9zZSB3cml0YWJsZSBsYXllciBpcyB0aGlzCiMgYm9hcmQncyBvd24gKCRMQVlFUl9ESVIvPGlkPiBvbiB0aGUgYm9hcmQncyBkaXNrLCBvciB0bXBmcyksIHNvIGJvYXJkcyBuZXZlciBzZWUgZWFjaCBvdGhlcidzCiMgd3JpdGVzIGFuZCBub3RoaW5nIGEgYm9hcmQgd3JpdGVzIHJlYWNoZXMgdGhlIHNlcnZlci4Kc2V0IC1ldW8gcGlwZWZhaWwKClNFUlZFUj0xMC43Ny4wLjIKRVhQT1JUPS9zcnYvbmV0cm9vdC9yYXNwYmlhbgpJTUFHRT1yYXNwYmlhbgpPUFRJT05TPXZlcnM9NC4xLHByb3RvPXRjcCxoYXJkLHRpbWVvPTYwMCxyZXRyYW5zPTIscnNpemU9MTA0ODU3Nix3c2l6ZT0xMDQ4NTc2LHJvClZFUlNJT05fT1BUSU9OUz12ZXJzPTQuMSxwcm90bz10Y3AsaGFyZCx0aW1lbz02MDAscmV0cmFucz0yLHJzaXplPTEwNDg1NzYsd3NpemU9MTA0ODU3Nixybyxub2N0byxhY3RpbWVvPTg2NDAwLGxvb2t1cGNhY2hlPWFsbApMQVlFUj1kaXNrCkxBWUVSX0RJUj0vdmFyL2xpYi9uZXRyb290L2xheWVycwpSRVRSSUVTPTEwClJFVFJZX0RFTEFZPTMKQVRURU1QVF9USU1FT1VUPTYwCiMgRXZlcnkgdHJ5IGVuZHMgYmVmb3JlIHRoZSB1bml0J3Mgb3duIHN0YXJ0IHRpbWVvdXQgd291bGQga2lsbCB0aGlzIHNjcmlwdCBtaWQtbW91bnQ6IGEgZmFpbHVyZQojIGlzIGFsd2F5cyB0aGlzIHNjcmlwdCdzIG9uZSBsaW5lLCBuZXZlciBzeXN0ZW1kJ3MgU0lHVEVSTS4KREVBRExJTkVfUz0kKCgzMDAgLSAxNSkpCkRFQURMSU5FPSQoKFNFQ09ORFMgKyBERUFETElORV9TKSkKU1RPUF9USU1FT1VUPTEwCgpSVU49L3J1bi9uZXRyb290ClNIQVJFRD0kUlVOL3NoYXJlZApST09UPSRSVU4vcm9vdApNT1VOVEVEPSRSVU4vbW91bnRlZApBU1NJR05FRD0vZXRjL25ldHJvb3QvYXNzaWduZWQKCmxvZygpIHsgZWNobyAibmV0cm9vdC1tb3VudDogJCoiID4mMjsgfQpkaWUoKSB7IGxvZyAiRkFJTEVEOiAkKiI7IGV4aXQgMTsgfQoKIyBXaGV0aGVyIERJUiBpcyBhIG1vdW50IHBvaW50LCByZWFkIGZyb20gdGhlIGtlcm5lbCdzIG1vdW50IHRhYmxlIGFuZCBuZXZlciBieSBzdGF0KDIpOiBhCiMgYm9hcmQgbW92ZWQgdG8gYW5vdGhlciBORlMgc2VydmVyIGlzIGRyb3BwZWQgZnJvbSBpdHMgb2xkIHNlcnZlcidzIGV4cG9ydHMsIGFuZCBldmVyeSBzdGF0IG9mCiMgdGhhdCBzZXJ2ZXIncyBtb3VudHMgdGhlbiBmYWlscyB3aXRoIEVTVEFMRSwgd2hpY2ggYG1vdW50cG9pbnRgIHRha2VzIGZvciAibm90IGEgbW91bnQgcG9pbnQiOwojIHRoZSBzdGFsZSBtb3VudCB3YXMgbmV2ZXIgdW5tb3VudGVkIGFuZCB0aGUgbmV4dCBta2RpciBvciBtb3VudCBvdmVyIGl0IGZhaWxlZCAoYmVuY2gvUkVBRE1FLm1kLAojICJBIGJvYXJkIG1vdmVkIGJldHdlZW4gdHdvIGxpdmUgc2VydmVycyIpLiBtb3VudGluZm8ncyBmaWVsZCA1IGlzIHRoZSBtb3VudCBwb2ludC4KbW91bnRlZF9hdCgpIHsKICAgIGxvY2FsIF9pZCBfcGFyZW50IF9kZXYgX3Jvb3QgcG9pbnQgX3Jlc3QKICAgIHdoaWxlIHJlYWQgLXIgX2lkIF9wYXJlbnQgX2RldiBfcm9vdCBwb2ludCBfcmVzdDsgZG8KICAgICAgICBbICIkcG9pbnQiID0gIiQxIiBdICYmIHJldHVybiAwCiAgICBkb25lIDwvcHJvYy9zZWxmL21vdW50aW5mbwogICAgcmV0dXJuIDEKfQoKbW91bnRlZF92ZXJzaW9uKCkgewogICAgaWYgbW91bnRlZF9hdCAiJFJPT1QiICYmIFsgLXMgIiRNT1VOVEVEIiBdOyB0aGVuIGNhdCAiJE1PVU5URUQiOyBmaQp9CgojIEV2ZXJ5IHByb2Nlc3Mgd2hvc2Ugcm9vdCBkaXJlY3RvcnkgaXMgaW5zaWRlIHRoZSBjaHJvb3QgKHN0YXJ0ZWQgYnkgbmV0cm9vdC1jaHJvb3QsIGJ5IFNTSAojIHNlc3Npb25zLCBieSBhbnl0aGluZyk6IFRFUk0sIHdhaXQsIHRoZW4gS0lMTCwgc28gdGhlIHVubW91bnQgY2Fubm90IGZhaWwgd2l0aCBFQlVTWS4KIyBPbmUgZmluZCBmb3IgYWxsIHByb2Nlc3NlczogYSByZWFkbGluayBwZXIgcHJvY2VzcyBjb3N0IH4yLjUgcyBvbiBhbiBlbXVsYXRlZCBib2FyZC4gQSBwcm9jZXNzCiMgdGhhdCBleGl0cyBtZWFud2hpbGUgbWFrZXMgZmluZCBjb21wbGFpbjsgdGhhdCBpcyBub3QgYW4gZXJyb3IgaGVyZS4KY2hyb290X3BpZHMoKSB7CiAgICBsb2NhbCBwCiAgICB7IGZpbmQgL3Byb2MvWzAtOV0qL3Jvb3QgLW1heGRlcHRoIDAgXCggLWxuYW1lICIkUk9PVCIgLW8gLWxuYW1lICIkUk9PVC8qIiBcKSBcCiAgICAgICAgLXByaW50ZiAnJWhcbicgMj4vZGV2L251bGwgfHwgdHJ1ZTsgfSB8IHdoaWxlIHJlYWQgLXIgcDsgZG8gZWNobyAiJHtwIy9wcm9jL30iOyBkb25lCn0KCnN0b3BfY2hyb290KCkgewogICAgbG9jYWwgcGlkcyB3YWl0ZWQ9MAogICAgcGlkcz0kKGNocm9vdF9waWRzKQogICAgWyAteiAiJHBpZHMiIF0gJiYgcmV0dXJuIDAKICAgIGxvZyAic3RvcHBpbmcgcHJvY2Vzc2VzIGluIHRoZSBjaHJvb3Q6ICQoZWNobyAkcGlkcykiCiAgICBraWxsIC1URVJNICRwaWRzIDI+L2Rldi9udWxsIHx8IHRydWUKICAgIHdoaWxlIFsgLW4gIiQoY2hyb290X3BpZHMpIiBdICYmIFsgIiR3YWl0ZWQiIC1sdCAiJFNUT1BfVElNRU9VVCIgXTsgZG8KICAgICAgICBzbGVlcCAxCiAgICAgICAgd2FpdGVkPSQoKHdhaXRlZCArIDEpKQogICAgZG9uZQogICAgcGlkcz0kKGNocm9vdF9waWRzKQogICAgaWYgWyAtbiAiJHBpZHMiIF07IHRoZW4KICAgICAgICBsb2cgImtpbGxpbmcgcHJvY2Vzc2VzIHRoYXQgaWdub3JlZCBTSUdURVJNOiAkKGVjaG8gJHBpZHMpIgogICAgICAgIGtpbGwgLUtJTEwgJHBpZHMgMj4vZGV2L251bGwgfHwgdHJ1ZQogICAgICAgIHNsZWVwIDEKICAgIGZpCn0KCnVtb3VudF9hbGwoKSB7CiAgICBzdG9wX2Nocm9vdAogICAgcm0gLWYgIiRNT1VOVEVEIgogICAgIyAtYyAoLS1uby1jYW5vbmljYWxpemUpOiB1bW91bnQoOCkgc3RhdHMgbm8gcGF0aCwgc28gYSBzdGFsZSBORlMgbW91bnQgKEVTVEFMRSkgZ29lcyB0b28KICAgIGlmIG1vdW50ZWRfYXQgIiRST09UIjsgdGhlbiB1bW91bnQgLWMgLVIgIiRST09UIiB8fCBkaWUgImNhbm5vdCB1bm1vdW50ICRST09UIjsgZmkKICAgIGlmIG1vdW50ZWRfYXQgIiRSVU4vbGF5ZXIiOyB0aGVuIHVtb3VudCAtYyAiJFJVTi9sYXllciI7IGZpCiAgICAjIC1SOiB0aGUgdmVyc2lvbidzIG93biBtb3VudCB1bmRlciBpdCBmaXJzdAogICAgaWYgbW91bnRlZF9hdCAiJFNIQVJFRCI7IHRoZW4gdW1vdW50IC1jIC1SICIkU0hBUkVEIiB8fCB1bW91bnQgLWMgLWwgIiRTSEFSRUQiOyBmaQp9CgojIG5mc19tb3VudCBQQVRIIERJUiBPUFRJT05TOiBtb3VudCAkU0VSVkVSOlBBVEggb24gRElSLCByZXRyeWluZyB3aGlsZSB0aGUgc2VydmVyIGlzIG5vdCB1cC4KIyBBIHRyeSBnZXRzIEFUVEVNUFRfVElNRU9VVCBzZWNvbmRzICg2MCk6IGEgbW91bnQgb3ZlciBhIGJhZCBsaW5rIChkZWxheSwgbG9zcywgY3V0cykgdGFrZXMKIyB0ZW5zIG9mIHNlY29uZHMsIGFuZCBhIHRyeSBraWxsZWQgYmVmb3JlIGl0IGVuZHMgc3RhcnRzIHRoZSBuZXh0IG9uZSBmcm9tIG5vdGhpbmcgLSBhdCAyMCBzCiMgZXZlcnkgdHJ5IG9mIGEgc3dpdGNoIHdhcyBraWxsZWQgKGJlbmNoL1JFQURNRS5tZCwgIlRoZSBmYXVsdCBzb2FrIjogdGhlIGJhZCBsaW5rKS4KbmZzX21vdW50KCkgewogICAgbG9jYWwgcGF0aD0kMSBkaXI9JDIgb3B0aW9ucz0kMyB0cnk9MSBlcnIgbGltaXQKICAgIHdoaWxlIDo7IGRvCiAgICAgICAgbGltaXQ9JCgoREVBRExJTkUgLSBTRUNPTkRTKSkKICAgICAgICBbICIkbGltaXQiIC1ndCAiJEFUVEVNUFRfVElNRU9VVCIgXSAmJiBsaW1pdD0kQVRURU1QVF9USU1FT1VUCiAgICAgICAgWyAiJGxpbWl0IiAtbHQgMSBdICYmIGRpZSAiY2Fubm90IG1vdW50ICRTRVJWRVI6JHBhdGggaW4gdGhlICR7REVBRExJTkVfU31zIHRoZSBtb3VudCB1bml0IGFsbG93cyAodHJ5ICR0cnkpOyBpcyB0aGUgTkZTIHNlcnZlciB1cCBhbmQgZG9lcyBpdCBleHBvcnQgdG8gdGhpcyBib2FyZD8gKG5ldHJvb3QgcHJvdmlzaW9uKSIKICAgICAgICBpZiBlcnI9JCh0aW1lb3V0ICIkbGltaXQiIG1vdW50IC10IG5mcyAtbyAiJG9wdGlvbnMiICIkU0VSVkVSOiRwYXRoIiAiJGRpciIgMj4mMSk7IHRoZW4KICAgICAgICAgICAgbG9nICJtb3VudGVkICRTRVJWRVI6JHBhdGggKHRyeSAkdHJ5LCAkb3B0aW9ucykiCiAgICAgICAgICAgIHJldHVybiAwCiAgICAgICAgZmkKICAgICAgICBsb2cgInRyeSAkdHJ5LyRSRVRSSUVTOiBtb3VudCAkU0VSVkVSOiRwYXRoIGZhaWxlZDogJHtlcnI6LXRpbWVkIG91dCBhZnRlciAke2xpbWl0fXN9IgogICAgICAgIFsgIiR0cnkiIC1nZSAiJFJFVFJJRVMiIF0gJiYgZGllICJjYW5ub3QgbW91bnQgJFNFUlZFUjokcGF0aCBhZnRlciAkUkVUUklFUyB0cmllczsgaXMgdGhlIE5GUyBzZXJ2ZXIgdXAgYW5kIGRvZXMgaXQgZXhwb3J0IHRvIHRoaXMgYm9hcmQ/IChuZXRyb290IHByb3Zpc2lvbikiCiAgICAgICAgdHJ5PSQoKHRyeSArIDEpKQogICAgICAgIHNsZWVwICIkUkVUUllfREVMQVkiCiAgICBkb25lCn0KCm1vdW50X3NoYXJlZCgpIHsKICAgIG1rZGlyIC1wICIkU0hBUkVEIgogICAgbW91bnRlZF9hdCAiJFNIQVJFRCIgJiYgcmV0dXJuIDAKICAgIFsgLWQgL3N5cy9tb2R1bGUvbmZzIF0gfHwgbW9kcHJvYmUgLXEgbmZzIDI+L2Rldi9udWxsIHx8IHRydWUgICMgbG9hZGVkOiBubyBleGVjCiAgICBuZnNfbW91bnQgIiRFWFBPUlQiICIkU0hBUkVEIiAiJE9QVElPTlMiCn0KCiMgQmluZCB0aGUgYm9hcmQncyBvd24gZmlsZSBvdmVyIHRoZSBpbWFnZSdzLCByZWFkLW9ubHksIHNvIHRoZSBjaHJvb3Qgc2VlcyB0aGlzIGJvYXJkJ3MKIyBpZGVudGl0eSBhbmQgY2Fubm90IGNoYW5nZSBpdDsgdGhlIGZpbGUgaXMgY3JlYXRlZCBpbiB0aGUgd3JpdGFibGUgbGF5ZXIgd2hlbiB0aGUgaW1hZ2UgaGFzCiMgbm9uZSAob3IgYSBkYW5nbGluZyBzeW1saW5rLCBhcyBjb250YWluZXIgaW1hZ2VzIG9mdGVuIGhhdmUgZm9yIHJlc29sdi5jb25mKS4KYmluZF9maWxlKCkgewogICAgbG9jYWwgc3JjPSQxIGRzdD0kUk9PVCQyCiAgICBbIC1lICIkc3JjIiBdIHx8IHJldHVybiAwCiAgICBpZiBbIC1MICIkZHN0IiBdIHx8IFsgISAtZiAiJGRzdCIgXTsgdGhlbgogICAgICAgIHJtIC1mICIkZHN0IgogICAgICAgIDogPiIkZHN0IgogICAgZmkKICAgICMgdXRpbC1saW51eCA+PSAyLjI3IHJlbW91bnRzIGl0IHJlYWQtb25seSBpdHNlbGYsIGFzIHRoZSBzZWNvbmQgY2FsbCBkaWQKICAgIG1vdW50IC0tYmluZCAtbyBybyAiJHNyYyIgIiRkc3QiCn0KCm1vdW50X3ZlcnNpb24oKSB7CiAgICBsb2NhbCB2ZXJzaW9uPSQxIGxvd2VyIHVwcGVyIHdvcmsKICAgIG1vdW50X3NoYXJlZAogICAgbG93ZXI9JFNIQVJFRC92ZXJzaW9ucy8kdmVyc2lvbgogICAgWyAtZCAiJGxvd2VyIiBdIHx8IGRpZSAidmVyc2lvbiAkdmVyc2lvbiBpcyBub3QgZXhwb3J0ZWQgaW4gJFNFUlZFUjokRVhQT1JUIChzZWUgbmV0cm9vdCB2ZXJzaW9ucykiCiAgICAjIEl0cyBvd24gbW91bnQ6IGEgc3VwZXJibG9jayBvZiBpdHMgb3duIHdpdGggdGhlIGltbXV0YWJsZSBwcm9maWxlICh0aGUgZXhwb3J0J3Mgc3RheXMgYXMgaXQKICAgICMgaXMpLiBSaWdodCBhZnRlciB0aGUgZXhwb3J0J3MgbW91bnQgc3VjY2VlZGVkLCBzbyB0aGUgcmV0cmllcyBhcmUgZm9yIHRoZSByYXJlIGhpY2N1cC4KICAgIG1vdW50ZWRfYXQgIiRsb3dlciIgfHwgbmZzX21vdW50ICIkRVhQT1JUL3ZlcnNpb25zLyR2ZXJzaW9uIiAiJGxvd2VyIiAiJFZFUlNJT05fT1BUSU9OUyIKICAgIGlmIFsgIiRMQVlFUiIgPSB0bXBmcyBdOyB0aGVuCiAgICAgICAgbWtkaXIgLXAgIiRSVU4vbGF5ZXIiCiAgICAgICAgbW91bnRlZF9hdCAiJFJVTi9sYXllciIgfHwgbW91bnQgLXQgdG1wZnMgLW8gbW9kZT0wNzU1IG5ldHJvb3QtbGF5ZXIgIiRSVU4vbGF5ZXIiCiAgICAgICAgdXBwZXI9JFJVTi9sYXllci91cHBlcgogICAgICAgIHdvcms9JFJVTi9sYXllci93b3JrCiAgICBlbHNlCiAgICAgICAgdXBwZXI9JExBWUVSX0RJUi8kdmVyc2lvbi91cHBlcgogICAgICAgIHdvcms9JExBWUVSX0RJUi8kdmVyc2lvbi93b3JrCiAgICBmaQogICAgbWtkaXIgLXAgIiR1cHBlciIgIiR3b3JrIiAiJFJPT1QiCiAgICBbIC1kIC9zeXMvbW9kdWxlL292ZXJsYXkgXSB8fCBtb2Rwcm9iZSAtcSBvdmVybGF5IDI+L2Rldi9udWxsIHx8IHRydWUKICAgIG1vdW50IC10IG92ZXJsYXkgbmV0cm9vdCAtbyAibG93ZXJkaXI9JGxvd2VyLHVwcGVyZGlyPSR1cHBlcix3b3JrZGlyPSR3b3JrIiAiJFJPT1QiIFwKICAgICAgICB8fCBkaWUgImNhbm5vdCBtb3VudCB0aGUgb3ZlcmxheSBvZiAkdmVyc2lvbiBvbiAkUk9PVCIKICAgIGxvY2FsIGQKICAgIG1rZGlyIC1wICIkUk9PVC9kZXYiICIkUk9PVC9wcm9jIiAiJFJPT1Qvc3lzIiAiJFJPT1QvcnVuIiAiJFJPT1QvZXRjIgogICAgZm9yIGQgaW4gZGV2IHByb2Mgc3lzOyBkbwogICAgICAgICMgcnNsYXZlOiB1bm1vdW50aW5nIHRoZSBjaHJvb3QgbXVzdCBuZXZlciBwcm9wYWdhdGUgYmFjayB0byB0aGUgYm9hcmQncyBvd24gbW91bnRzCiAgICAgICAgIyAob25lIG1vdW50KDgpIGNhbGw6IHRoZSBiaW5kLCB0aGVuIHRoZSBwcm9wYWdhdGlvbiBjaGFuZ2UsIGFzIHR3byBzZXBhcmF0ZSBvbmVzIGRpZCkKICAgICAgICBtb3VudCAtLXJiaW5kIC0tbWFrZS1yc2xhdmUgIi8kZCIgIiRST09ULyRkIgogICAgZG9uZQogICAgbW91bnQgLXQgdG1wZnMgLW8gbW9kZT0wNzU1LG5vc3VpZCxub2RldiBuZXRyb290LXJ1biAiJFJPT1QvcnVuIgogICAgbWtkaXIgLXAgIiRST09UL3J1bi9uZXRyb290IgogICAgZWNobyAiJHZlcnNpb24iID4iJFJPT1QvcnVuL25ldHJvb3QvdmVyc2lvbiIKICAgICMgVGhlIG1hbmlmZXN0IHN0YXlzIG9uIHRoZSBzZXJ2ZXIgKHJlYWQtb25seSBiaW5kLCBubyBjb3B5IG9mIGEgbXVsdGktTUIgZmlsZSkuCiAgICBpZiBbIC1mICIkU0hBUkVEL3ZlcnNpb25zLyR2ZXJzaW9uLmpzb24iIF07IHRoZW4KICAgICAgICA6ID4iJFJPT1QvcnVuL25ldHJvb3QvbWFuaWZlc3QuanNvbiIKICAgICAgICBtb3VudCAtLWJpbmQgIiRTSEFSRUQvdmVyc2lvbnMvJHZlcnNpb24uanNvbiIgIiRST09UL3J1bi9uZXRyb290L21hbmlmZXN0Lmpzb24iCiAgICBmaQogICAgYmluZF9maWxlIC9ldGMvaG9zdG5hbWUgL2V0Yy9ob3N0bmFtZQogICAgYmluZF9maWxlIC9ldGMvbWFjaGluZS1pZCAvZXRjL21hY2hpbmUtaWQKICAgIGJpbmRfZmlsZSAiJChyZWFkbGluayAtZiAvZXRjL3Jlc29sdi5jb25mKSIgL2V0Yy9yZXNvbHYuY29uZgogICAgZWNobyAiJHZlcnNpb24iID4iJE1PVU5URUQiCn0KCnN0YXR1cygpIHsKICAgIGxvY2FsIGFzc2lnbmVkPSIiIG1vdW50ZWQKICAgIFsgLXMgIiRBU1NJR05FRCIgXSAmJiBhc3NpZ25lZD0kKGNhdCAiJEFTU0lHTkVEIikKICAgIG1vdW50ZWQ9JChtb3VudGVkX3ZlcnNpb24pCiAgICBwcmludGYgJ3siYXNzaWduZWQiOiAiJXMiLCAibW91bnRlZCI6ICIlcyIsICJyb290IjogIiVzIiwgInNoYXJlZCI6ICIlcyIsICJpbWFnZSI6ICIlcyIsICJzZXJ2ZXIiOiAiJXMifVxuJyBcCiAgICAgICAgIiRhc3NpZ25lZCIgIiRtb3VudGVkIiAiJFJPT1QiICIkU0hBUkVEIiAiJElNQUdFIiAiJFNFUlZFUjokRVhQT1JUIgp9CgpjYXNlICIkezE6LX0iIGluCi0tc3RhdHVzKSBzdGF0dXM7IGV4aXQgMCA7OwotLXVtb3VudCkgdW1vdW50X2FsbDsgZXhpdCAwIDs7Ci1oIHwgLS1oZWxwKSBzZWQgLW4gJzIsMTFwJyAiJDAiOyBleGl0IDAgOzsKLSopIGRpZSAidW5rbm93biBvcHRpb24gJDEgKHNlZSAtLWhlbHApIiA7Owplc2FjCgp2ZXJzaW9uPSR7MTotfQppZiBbIC16ICIkdmVyc2lvbiIgXTsgdGhlbgogICAgWyAtcyAiJEFTU0lHTkVEIiBdIHx8IGRpZSAibm8gdmVyc2lvbiBhc3NpZ25lZCBpbiAkQVNTSUdORUQgKHJ1biBuZXRyb290IHByb3Zpc2lvbikiCiAgICB2ZXJzaW9uPSQoY2F0ICIkQVNTSUdORUQiKQpmaQpjYXNlICIkdmVyc2lvbiIgaW4gKlshMC05YS1mXSogfCAiIikgZGllICJiYWQgdmVyc2lvbiBpZCAnJHZlcnNpb24nIiA7OyBlc2FjCgojIFRoZSBjaHJvb3QgaXMgd2hvbGUgd2hlbiBpdHMgcm9vdCBhbmQgZXZlcnkgYmluZCBpdCBuZWVkcyBhcmUgbW91bnRlZDsgYSByb290IHRoYXQgbG9zdCBvbmUKIyAoc29tZW9uZSB1bm1vdW50ZWQgL2RldiwgYSBjcmFzaCBoYWxmLXdheSB0aHJvdWdoIGEgbW91bnQpIGlzIHJlbW91bnRlZCwgbmV2ZXIgbGVmdCBicm9rZW4uCndob2xlKCkgewogICAgbG9jYWwgZAogICAgbW91bnRlZF9hdCAiJFJPT1QiIHx8IHJldHVybiAxCiAgICBmb3IgZCBpbiBkZXYgcHJvYyBzeXMgcnVuOyBkbyBtb3VudGVkX2F0ICIkUk9PVC8kZCIgfHwgcmV0dXJuIDE7IGRvbmUKfQoKY3VycmVudD0kKG1vdW50ZWRfdmVyc2lvbikKaWYgWyAiJGN1cnJlbnQiID0gIiR2ZXJzaW9uIiBdOyB0aGVuCiAgICBpZiB3aG9sZTsgdGhlbgogICAgICAgIGVjaG8gdW5jaGFuZ2VkCiAgICAgICAgZXhpdCAwCiAgICBmaQogICAgbG9nICJ2ZXJzaW9uICR2ZXJzaW9uIGlzIG1vdW50ZWQgYnV0IGl0cyBjaHJvb3QgaXMgbm90IHdob2xlOyByZW1vdW50aW5nIGl0IgpmaQppZiBbIC1uICIkY3VycmVudCIgXSB8fCBtb3VudGVkX2F0ICIkUk9PVCIgfHwgbW91bnRlZF9hdCAiJFNIQVJFRCI7IHRoZW4KICAgIGxvZyAic3dpdGNoaW5nIGZyb20gJHtjdXJyZW50Oi1hIHBhcnRpYWwgbW91bnR9IHRvICR2ZXJzaW9uIgogICAgdW1vdW50X2FsbApmaQptb3VudF92ZXJzaW9uICIkdmVyc2lvbiIKbG9nICJ2ZXJzaW9uICR2ZXJzaW9uIG1vdW50ZWQgb24gJFJPT1QiCmVjaG8gY2hhbmdlZAo= aec2879186ccce66be18d26aba207ac55d92628d4d90b81ad3c64291eb2707ca && scripts=1
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
