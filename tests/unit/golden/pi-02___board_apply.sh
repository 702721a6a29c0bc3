set -u
CHECK=0
DIFF=0
VERSION=fedcba9876543210
NAME=pi-02
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
put /usr/local/sbin/netroot-mount 755 IyEvYmluL2Jhc2gKIyBuZXRyb290LW1vdW50OiBtb3VudCB0aGlzIGJvYXJkJ3MgYXNzaWduZWQgbmV0cm9vdCB2ZXJzaW9uIGFuZCBwcmVwYXJlIGl0cyBjaHJvb3QuCiMgTWFuYWdlZCBieSBuZXRyb290IChyb2xlIG5ldHJvb3RfYm9hcmQpIGZvciBwaS0wMjsgbG9jYWwgZWRpdHMgYXJlIHJlcGxhY2VkLgojCiMgICBuZXRyb290LW1vdW50IFtWRVJTSU9OX0lEXSAgIG1vdW50IFZFUlNJT05fSUQgKGRlZmF1bHQ6IC9ldGMvbmV0cm9vdC9hc3NpZ25lZCk7IGlmIGFub3RoZXIKIyAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgdmVyc2lvbiBpcyBtb3VudGVkLCBzdG9wIHdoYXQgcnVucyBpbiB0aGUgY2hyb290LCB1bm1vdW50IGl0IGFuZAojICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICBtb3VudCB0aGUgbmV3IG9uZSAodGhlIHNhZmUgc3dpdGNoKS4gUHJpbnRzICJjaGFuZ2VkIiBvcgojICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAidW5jaGFuZ2VkIiBvbiBzdGRvdXQuCiMgICBuZXRyb290LW1vdW50IC0tdW1vdW50ICAgICAgIHN0b3Agd2hhdCBydW5zIGluIHRoZSBjaHJvb3QgYW5kIHVubW91bnQgZXZlcnl0aGluZy4KIyAgIG5ldHJvb3QtbW91bnQgLS1zdGF0dXMgICAgICAgSlNPTjogYXNzaWduZWQsIG1vdW50ZWQsIHJvb3QsIHNoYXJlZCwgaW1hZ2UsIHNlcnZlci4KIwojIExheW91dDogdGhlIGltYWdlJ3MgZXhwb3J0IGlzIG1vdW50ZWQgUkVBRC1PTkxZIGF0ICRTSEFSRUQ7IHRoZSB2ZXJzaW9uIGl0c2VsZiBpcyBtb3VudGVkCiMgb3ZlciAkU0hBUkVEL3ZlcnNpb25zLzxpZD4sIHJlYWQtb25seSB3aXRoIHRoZSBjYWNoaW5nIGFuIGltbXV0YWJsZSB0cmVlIGFsbG93cwojICgkVkVSU0lPTl9PUFRJT05TOiB0ZW1wbGF0ZXMvX2JvYXJkLmoyIHNheXMgd2h5IGVhY2ggaXMgc2FmZSB0aGVyZSBhbmQgb25seSB0aGVyZSk7IHRoZSBjaHJvb3QKIyByb290ICRST09UIGlzIGFuIG92ZXJsYXlmcyB3aG9zZSBsb3dlciBsYXllciBpcyB0aGF0IG1vdW50IGFuZCB3aG9zZSB3cml0YWJsZSBsYXllciBpcyB0aGlzCiMgYm9hcmQncyBvd24gKCRMQVlFUl9ESVIvPGlkPiBvbiB0aGUgYm9hcmQncyBkaXNrLCBvciB0bXBmcyksIHNvIGJvYXJkcyBuZXZlciBzZWUgZWFjaCBvdGhlcidzCiMgd3JpdGVzIGFuZCBub3RoaW5nIGEgYm9hcmQgd3JpdGVzIHJlYWNoZXMgdGhlIHNlcnZlci4Kc2V0IC1ldW8gcGlwZWZhaWwKClNFUlZFUj0xMC43Ny4wLjIKRVhQT1JUPS9zcnYvbmV0cm9vdC9yYXNwYmlhbgpJTUFHRT1yYXNwYmlhbgpPUFRJT05TPXZlcnM9Myxwcm90bz10Y3AsbW91bnRwcm90bz10Y3Asbm9sb2NrLGhhcmQsdGltZW89NjAwLHJldHJhbnM9Mixyc2l6ZT0xMDQ4NTc2LHdzaXplPTEwNDg1NzYscm8KVkVSU0lPTl9PUFRJT05TPXZlcnM9Myxwcm90bz10Y3AsbW91bnRwcm90bz10Y3Asbm9sb2NrLGhhcmQsdGltZW89NjAwLHJldHJhbnM9Mixyc2l6ZT0xMDQ4NTc2LHdzaXplPTEwNDg1NzYscm8sbm9jdG8sYWN0aW1lbz04NjQwMCxsb29rdXBjYWNoZT1hbGwKTEFZRVI9dG1wZnMKTEFZRVJfRElSPS92YXIvbGliL25ldHJvb3QvbGF5ZXJzClJFVFJJRVM9MTAKUkVUUllfREVMQVk9MwpBVFRFTVBUX1RJTUVPVVQ9NjAKIyBFdmVyeSB0cnkgZW5kcyBiZWZvcmUgdGhlIHVuaXQncyBvd24gc3RhcnQgdGltZW91dCB3b3VsZCBraWxsIHRoaXMgc2NyaXB0IG1pZC1tb3VudDogYSBmYWlsdXJlCiMgaXMgYWx3YXlzIHRoaXMgc2NyaXB0J3Mgb25lIGxpbmUsIG5ldmVyIHN5c3RlbWQncyBTSUdURVJNLgpERUFETElORV9TPSQoKDMwMCAtIDE1KSkKREVBRExJTkU9JCgoU0VDT05EUyArIERFQURMSU5FX1MpKQpTVE9QX1RJTUVPVVQ9MTAKClJVTj0vcnVuL25ldHJvb3QKU0hBUkVEPSRSVU4vc2hhcmVkClJPT1Q9JFJVTi9yb290Ck1PVU5URUQ9JFJVTi9tb3VudGVkCkFTU0lHTkVEPS9ldGMvbmV0cm9vdC9hc3NpZ25lZAoKbG9nKCkgeyBlY2hvICJuZXRyb290LW1vdW50OiAkKiIgPiYyOyB9CmRpZSgpIHsgbG9nICJGQUlMRUQ6ICQqIjsgZXhpdCAxOyB9CgojIFdoZXRoZXIgRElSIGlzIGEgbW91bnQgcG9pbnQsIHJlYWQgZnJvbSB0aGUga2VybmVsJ3MgbW91bnQgdGFibGUgYW5kIG5ldmVyIGJ5IHN0YXQoMik6IGEKIyBib2FyZCBtb3ZlZCB0byBhbm90aGVyIE5GUyBzZXJ2ZXIgaXMgZHJvcHBlZCBmcm9tIGl0cyBvbGQgc2VydmVyJ3MgZXhwb3J0cywgYW5kIGV2ZXJ5IHN0YXQgb2YKIyB0aGF0IHNlcnZlcidzIG1vdW50cyB0aGVuIGZhaWxzIHdpdGggRVNUQUxFLCB3aGljaCBgbW91bnRwb2ludGAgdGFrZXMgZm9yICJub3QgYSBtb3VudCBwb2ludCI7CiMgdGhlIHN0YWxlIG1vdW50IHdhcyBuZXZlciB1bm1vdW50ZWQgYW5kIHRoZSBuZXh0IG1rZGlyIG9yIG1vdW50IG92ZXIgaXQgZmFpbGVkIChiZW5jaC9SRUFETUUubWQsCiMgIkEgYm9hcmQgbW92ZWQgYmV0d2VlbiB0d28gbGl2ZSBzZXJ2ZXJzIikuIG1vdW50aW5mbydzIGZpZWxkIDUgaXMgdGhlIG1vdW50IHBvaW50Lgptb3VudGVkX2F0KCkgewogICAgbG9jYWwgX2lkIF9wYXJlbnQgX2RldiBfcm9vdCBwb2ludCBfcmVzdAogICAgd2hpbGUgcmVhZCAtciBfaWQgX3BhcmVudCBfZGV2IF9yb290IHBvaW50IF9yZXN0OyBkbwogICAgICAgIFsgIiRwb2ludCIgPSAiJDEiIF0gJiYgcmV0dXJuIDAKICAgIGRvbmUgPC9wcm9jL3NlbGYvbW91bnRpbmZvCiAgICByZXR1cm4gMQp9Cgptb3VudGVkX3ZlcnNpb24oKSB7CiAgICBpZiBtb3VudGVkX2F0ICIkUk9PVCIgJiYgWyAtcyAiJE1PVU5URUQiIF07IHRoZW4gY2F0ICIkTU9VTlRFRCI7IGZpCn0KCiMgRXZlcnkgcHJvY2VzcyB3aG9zZSByb290IGRpcmVjdG9yeSBpcyBpbnNpZGUgdGhlIGNocm9vdCAoc3RhcnRlZCBieSBuZXRyb290LWNocm9vdCwgYnkgU1NICiMgc2Vzc2lvbnMsIGJ5IGFueXRoaW5nKTogVEVSTSwgd2FpdCwgdGhlbiBLSUxMLCBzbyB0aGUgdW5tb3VudCBjYW5ub3QgZmFpbCB3aXRoIEVCVVNZLgojIE9uZSBmaW5kIGZvciBhbGwgcHJvY2Vzc2VzOiBhIHJlYWRsaW5rIHBlciBwcm9jZXNzIGNvc3QgfjIuNSBzIG9uIGFuIGVtdWxhdGVkIGJvYXJkLiBBIHByb2Nlc3MKIyB0aGF0IGV4aXRzIG1lYW53aGlsZSBtYWtlcyBmaW5kIGNvbXBsYWluOyB0aGF0IGlzIG5vdCBhbiBlcnJvciBoZXJlLgpjaHJvb3RfcGlkcygpIHsKICAgIGxvY2FsIHAKICAgIHsgZmluZCAvcHJvYy9bMC05XSovcm9vdCAtbWF4ZGVwdGggMCBcKCAtbG5hbWUgIiRST09UIiAtbyAtbG5hbWUgIiRST09ULyoiIFwpIFwKICAgICAgICAtcHJpbnRmICclaFxuJyAyPi9kZXYvbnVsbCB8fCB0cnVlOyB9IHwgd2hpbGUgcmVhZCAtciBwOyBkbyBlY2hvICIke3AjL3Byb2MvfSI7IGRvbmUKfQoKc3RvcF9jaHJvb3QoKSB7CiAgICBsb2NhbCBwaWRzIHdhaXRlZD0wCiAgICBwaWRzPSQoY2hyb290X3BpZHMpCiAgICBbIC16ICIkcGlkcyIgXSAmJiByZXR1cm4gMAogICAgbG9nICJzdG9wcGluZyBwcm9jZXNzZXMgaW4gdGhlIGNocm9vdDogJChlY2hvICRwaWRzKSIKICAgIGtpbGwgLVRFUk0gJHBpZHMgMj4vZGV2L251bGwgfHwgdHJ1ZQogICAgd2hpbGUgWyAtbiAiJChjaHJvb3RfcGlkcykiIF0gJiYgWyAiJHdhaXRlZCIgLWx0ICIkU1RPUF9USU1FT1VUIiBdOyBkbwogICAgICAgIHNsZWVwIDEKICAgICAgICB3YWl0ZWQ9JCgod2FpdGVkICsgMSkpCiAgICBkb25lCiAgICBwaWRzPSQoY2hyb290X3BpZHMpCiAgICBpZiBbIC1uICIkcGlkcyIgXTsgdGhlbgogICAgICAgIGxvZyAia2lsbGluZyBwcm9jZXNzZXMgdGhhdCBpZ25vcmVkIFNJR1RFUk06ICQoZWNobyAkcGlkcykiCiAgICAgICAga2lsbCAtS0lMTCAkcGlkcyAyPi9kZXYvbnVsbCB8fCB0cnVlCiAgICAgICAgc2xlZXAgMQogICAgZmkKfQoKdW1vdW50X2FsbCgpIHsKICAgIHN0b3BfY2hyb290CiAgICBybSAtZiAiJE1PVU5URUQiCiAgICAjIC1jICgtLW5vLWNhbm9uaWNhbGl6ZSk6IHVtb3VudCg4KSBzdGF0cyBubyBwYXRoLCBzbyBhIHN0YWxlIE5GUyBtb3VudCAoRVNUQUxFKSBnb2VzIHRvbwogICAgaWYgbW91bnRlZF9hdCAiJFJPT1QiOyB0aGVuIHVtb3VudCAtYyAtUiAiJFJPT1QiIHx8IGRpZSAiY2Fubm90IHVubW91bnQgJFJPT1QiOyBmaQogICAgaWYgbW91bnRlZF9hdCAiJFJVTi9sYXllciI7IHRoZW4gdW1vdW50IC1jICIkUlVOL2xheWVyIjsgZmkKICAgICMgLVI6IHRoZSB2ZXJzaW9uJ3Mgb3duIG1vdW50IHVuZGVyIGl0IGZpcnN0CiAgICBpZiBtb3VudGVkX2F0ICIkU0hBUkVEIjsgdGhlbiB1bW91bnQgLWMgLVIgIiRTSEFSRUQiIHx8IHVtb3VudCAtYyAtbCAiJFNIQVJFRCI7IGZpCn0KCiMgbmZzX21vdW50IFBBVEggRElSIE9QVElPTlM6IG1vdW50ICRTRVJWRVI6UEFUSCBvbiBESVIsIHJldHJ5aW5nIHdoaWxlIHRoZSBzZXJ2ZXIgaXMgbm90IHVwLgojIEEgdHJ5IGdldHMgQVRURU1QVF9USU1FT1VUIHNlY29uZHMgKDYwKTogYSBtb3VudCBvdmVyIGEgYmFkIGxpbmsgKGRlbGF5LCBsb3NzLCBjdXRzKSB0YWtlcwojIHRlbnMgb2Ygc2Vjb25kcywgYW5kIGEgdHJ5IGtpbGxlZCBiZWZvcmUgaXQgZW5kcyBzdGFydHMgdGhlIG5leHQgb25lIGZyb20gbm90aGluZyAtIGF0IDIwIHMKIyBldmVyeSB0cnkgb2YgYSBzd2l0Y2ggd2FzIGtpbGxlZCAoYmVuY2gvUkVBRE1FLm1kLCAiVGhlIGZhdWx0IHNvYWsiOiB0aGUgYmFkIGxpbmspLgpuZnNfbW91bnQoKSB7CiAgICBsb2NhbCBwYXRoPSQxIGRpcj0kMiBvcHRpb25zPSQzIHRyeT0xIGVyciBsaW1pdAogICAgd2hpbGUgOjsgZG8KICAgICAgICBsaW1pdD0kKChERUFETElORSAtIFNFQ09ORFMpKQogICAgICAgIFsgIiRsaW1pdCIgLWd0ICIkQVRURU1QVF9USU1FT1VUIiBdICYmIGxpbWl0PSRBVFRFTVBUX1RJTUVPVVQKICAgICAgICBbICIkbGltaXQiIC1sdCAxIF0gJiYgZGllICJjYW5ub3QgbW91bnQgJFNFUlZFUjokcGF0aCBpbiB0aGUgJHtERUFETElORV9TfXMgdGhlIG1vdW50IHVuaXQgYWxsb3dzICh0cnkgJHRyeSk7IGlzIHRoZSBORlMgc2VydmVyIHVwIGFuZCBkb2VzIGl0IGV4cG9ydCB0byB0aGlzIGJvYXJkPyAobmV0cm9vdCBwcm92aXNpb24pIgogICAgICAgIGlmIGVycj0kKHRpbWVvdXQgIiRsaW1pdCIgbW91bnQgLXQgbmZzIC1vICIkb3B0aW9ucyIgIiRTRVJWRVI6JHBhdGgiICIkZGlyIiAyPiYxKTsgdGhlbgogICAgICAgICAgICBsb2cgIm1vdW50ZWQgJFNFUlZFUjokcGF0aCAodHJ5ICR0cnksICRvcHRpb25zKSIKICAgICAgICAgICAgcmV0dXJuIDAKICAgICAgICBmaQogICAgICAgIGxvZyAidHJ5ICR0cnkvJFJFVFJJRVM6IG1vdW50ICRTRVJWRVI6JHBhdGggZmFpbGVkOiAke2VycjotdGltZWQgb3V0IGFmdGVyICR7bGltaXR9c30iCiAgICAgICAgWyAiJHRyeSIgLWdlICIkUkVUUklFUyIgXSAmJiBkaWUgImNhbm5vdCBtb3VudCAkU0VSVkVSOiRwYXRoIGFmdGVyICRSRVRSSUVTIHRyaWVzOyBpcyB0aGUgTkZTIHNlcnZlciB1cCBhbmQgZG9lcyBpdCBleHBvcnQgdG8gdGhpcyBib2FyZD8gKG5ldHJvb3QgcHJvdmlzaW9uKSIKICAgICAgICB0cnk9JCgodHJ5ICsgMSkpCiAgICAgICAgc2xlZXAgIiRSRVRSWV9ERUxBWSIKICAgIGRvbmUKfQoKbW91bnRfc2hhcmVkKCkgewogICAgbWtkaXIgLXAgIiRTSEFSRUQiCiAgICBtb3VudGVkX2F0ICIkU0hBUkVEIiAmJiByZXR1cm4gMAogICAgWyAtZCAvc3lzL21vZHVsZS9uZnMgXSB8fCBtb2Rwcm9iZSAtcSBuZnMgMj4vZGV2L251bGwgfHwgdHJ1ZSAgIyBsb2FkZWQ6IG5vIGV4ZWMKICAgIG5mc19tb3VudCAiJEVYUE9SVCIgIiRTSEFSRUQiICIkT1BUSU9OUyIKfQoKIyBCaW5kIHRoZSBib2FyZCdzIG93biBmaWxlIG92ZXIgdGhlIGltYWdlJ3MsIHJlYWQtb25seSwgc28gdGhlIGNocm9vdCBzZWVzIHRoaXMgYm9hcmQncwojIGlkZW50aXR5IGFuZCBjYW5ub3QgY2hhbmdlIGl0OyB0aGUgZmlsZSBpcyBjcmVhdGVkIGluIHRoZSB3cml0YWJsZSBsYXllciB3aGVuIHRoZSBpbWFnZSBoYXMKIyBub25lIChvciBhIGRhbmdsaW5nIHN5bWxpbmssIGFzIGNvbnRhaW5lciBpbWFnZXMgb2Z0ZW4gaGF2ZSBmb3IgcmVzb2x2LmNvbmYpLgpiaW5kX2ZpbGUoKSB7CiAgICBsb2NhbCBzcmM9JDEgZHN0PSRST09UJDIKICAgIFsgLWUgIiRzcmMiIF0gfHwgcmV0dXJuIDAKICAgIGlmIFsgLUwgIiRkc3QiIF0gfHwgWyAhIC1mICIkZHN0IiBdOyB0aGVuCiAgICAgICAgcm0gLWYgIiRkc3QiCiAgICAgICAgOiA+IiRkc3QiCiAgICBmaQogICAgIyB1dGlsLWxpbnV4ID49IDIuMjcgcmVtb3VudHMgaXQgcmVhZC1vbmx5IGl0c2VsZiwgYXMgdGhlIHNlY29uZCBjYWxsIGRpZAogICAgbW91bnQgLS1iaW5kIC1vIHJvICIkc3JjIiAiJGRzdCIKfQoKbW91bnRfdmVyc2lvbigpIHsKICAgIGxvY2FsIHZlcnNpb249JDEgbG93ZXIgdXBwZXIgd29yawogICAgbW91bnRfc2hhcmVkCiAgICBsb3dlcj0kU0hBUkVEL3ZlcnNpb25zLyR2ZXJzaW9uCiAgICBbIC1kICIkbG93ZXIiIF0gfHwgZGllICJ2ZXJzaW9uICR2ZXJzaW9uIGlzIG5vdCBleHBvcnRlZCBpbiAkU0VSVkVSOiRFWFBPUlQgKHNlZSBuZXRyb290IHZlcnNpb25zKSIKICAgICMgSXRzIG93biBtb3VudDogYSBzdXBlcmJsb2NrIG9mIGl0cyBvd24gd2l0aCB0aGUgaW1tdXRhYmxlIHByb2ZpbGUgKHRoZSBleHBvcnQncyBzdGF5cyBhcyBpdAogICAgIyBpcykuIFJpZ2h0IGFmdGVyIHRoZSBleHBvcnQncyBtb3VudCBzdWNjZWVkZWQsIHNvIHRoZSByZXRyaWVzIGFyZSBmb3IgdGhlIHJhcmUgaGljY3VwLgogICAgbW91bnRlZF9hdCAiJGxvd2VyIiB8fCBuZnNfbW91bnQgIiRFWFBPUlQvdmVyc2lvbnMvJHZlcnNpb24iICIkbG93ZXIiICIkVkVSU0lPTl9PUFRJT05TIgogICAgaWYgWyAiJExBWUVSIiA9IHRtcGZzIF07IHRoZW4KICAgICAgICBta2RpciAtcCAiJFJVTi9sYXllciIKICAgICAgICBtb3VudGVkX2F0ICIkUlVOL2xheWVyIiB8fCBtb3VudCAtdCB0bXBmcyAtbyBtb2RlPTA3NTUgbmV0cm9vdC1sYXllciAiJFJVTi9sYXllciIKICAgICAgICB1cHBlcj0kUlVOL2xheWVyL3VwcGVyCiAgICAgICAgd29yaz0kUlVOL2xheWVyL3dvcmsKICAgIGVsc2UKICAgICAgICB1cHBlcj0kTEFZRVJfRElSLyR2ZXJzaW9uL3VwcGVyCiAgICAgICAgd29yaz0kTEFZRVJfRElSLyR2ZXJzaW9uL3dvcmsKICAgIGZpCiAgICBta2RpciAtcCAiJHVwcGVyIiAiJHdvcmsiICIkUk9PVCIKICAgIFsgLWQgL3N5cy9tb2R1bGUvb3ZlcmxheSBdIHx8IG1vZHByb2JlIC1xIG92ZXJsYXkgMj4vZGV2L251bGwgfHwgdHJ1ZQogICAgbW91bnQgLXQgb3ZlcmxheSBuZXRyb290IC1vICJsb3dlcmRpcj0kbG93ZXIsdXBwZXJkaXI9JHVwcGVyLHdvcmtkaXI9JHdvcmsiICIkUk9PVCIgXAogICAgICAgIHx8IGRpZSAiY2Fubm90IG1vdW50IHRoZSBvdmVybGF5IG9mICR2ZXJzaW9uIG9uICRST09UIgogICAgbG9jYWwgZAogICAgbWtkaXIgLXAgIiRST09UL2RldiIgIiRST09UL3Byb2MiICIkUk9PVC9zeXMiICIkUk9PVC9ydW4iICIkUk9PVC9ldGMiCiAgICBmb3IgZCBpbiBkZXYgcHJvYyBzeXM7IGRvCiAgICAgICAgIyByc2xhdmU6IHVubW91bnRpbmcgdGhlIGNocm9vdCBtdXN0IG5ldmVyIHByb3BhZ2F0ZSBiYWNrIHRvIHRoZSBib2FyZCdzIG93biBtb3VudHMKICAgICAgICAjIChvbmUgbW91bnQoOCkgY2FsbDogdGhlIGJpbmQsIHRoZW4gdGhlIHByb3BhZ2F0aW9uIGNoYW5nZSwgYXMgdHdvIHNlcGFyYXRlIG9uZXMgZGlkKQogICAgICAgIG1vdW50IC0tcmJpbmQgLS1tYWtlLXJzbGF2ZSAiLyRkIiAiJFJPT1QvJGQiCiAgICBkb25lCiAgICBtb3VudCAtdCB0bXBmcyAtbyBtb2RlPTA3NTUsbm9zdWlkLG5vZGV2IG5ldHJvb3QtcnVuICIkUk9PVC9ydW4iCiAgICBta2RpciAtcCAiJFJPT1QvcnVuL25ldHJvb3QiCiAgICBlY2hvICIkdmVyc2lvbiIgPiIkUk9PVC9ydW4vbmV0cm9vdC92ZXJzaW9uIgogICAgIyBUaGUgbWFuaWZlc3Qgc3RheXMgb24gdGhlIHNlcnZlciAocmVhZC1vbmx5IGJpbmQsIG5vIGNvcHkgb2YgYSBtdWx0aS1NQiBmaWxlKS4KICAgIGlmIFsgLWYgIiRTSEFSRUQvdmVyc2lvbnMvJHZlcnNpb24uanNvbiIgXTsgdGhlbgogICAgICAgIDogPiIkUk9PVC9ydW4vbmV0cm9vdC9tYW5pZmVzdC5qc29uIgogICAgICAgIG1vdW50IC0tYmluZCAiJFNIQVJFRC92ZXJzaW9ucy8kdmVyc2lvbi5qc29uIiAiJFJPT1QvcnVuL25ldHJvb3QvbWFuaWZlc3QuanNvbiIKICAgIGZpCiAgICBiaW5kX2ZpbGUgL2V0Yy9ob3N0bmFtZSAvZXRjL2hvc3RuYW1lCiAgICBiaW5kX2ZpbGUgL2V0Yy9tYWNoaW5lLWlkIC9ldGMvbWFjaGluZS1pZAogICAgYmluZF9maWxlICIkKHJlYWRsaW5rIC1mIC9ldGMvcmVzb2x2LmNvbmYpIiAvZXRjL3Jlc29sdi5jb25mCiAgICBlY2hvICIkdmVyc2lvbiIgPiIkTU9VTlRFRCIKfQoKc3RhdHVzKCkgewogICAgbG9jYWwgYXNzaWduZWQ9IiIgbW91bnRlZAogICAgWyAtcyAiJEFTU0lHTkVEIiBdICYmIGFzc2lnbmVkPSQoY2F0ICIkQVNTSUdORUQiKQogICAgbW91bnRlZD0kKG1vdW50ZWRfdmVyc2lvbikKICAgIHByaW50ZiAneyJhc3NpZ25lZCI6ICIlcyIsICJtb3VudGVkIjogIiVzIiwgInJvb3QiOiAiJXMiLCAic2hhcmVkIjogIiVzIiwgImltYWdlIjogIiVzIiwgInNlcnZlciI6ICIlcyJ9XG4nIFwKICAgICAgICAiJGFzc2lnbmVkIiAiJG1vdW50ZWQiICIkUk9PVCIgIiRTSEFSRUQiICIkSU1BR0UiICIkU0VSVkVSOiRFWFBPUlQiCn0KCmNhc2UgIiR7MTotfSIgaW4KLS1zdGF0dXMpIHN0YXR1czsgZXhpdCAwIDs7Ci0tdW1vdW50KSB1bW91bnRfYWxsOyBleGl0IDAgOzsKLWggfCAtLWhlbHApIHNlZCAtbiAnMiwxMXAnICIkMCI7IGV4aXQgMCA7OwotKikgZGllICJ1bmtub3duIG9wdGlvbiAkMSAoc2VlIC0taGVscCkiIDs7CmVzYWMKCnZlcnNpb249JHsxOi19CmlmIFsgLXogIiR2ZXJzaW9uIiBdOyB0aGVuCiAgICBbIC1zICIkQVNTSUdORUQiIF0gfHwgZGllICJubyB2ZXJzaW9uIGFzc2lnbmVkIGluICRBU1NJR05FRCAocnVuIG5ldHJvb3QgcHJvdmlzaW9uKSIKICAgIHZlcnNpb249JChjYXQgIiRBU1NJR05FRCIpCmZpCmNhc2UgIiR2ZXJzaW9uIiBpbiAqWyEwLTlhLWZdKiB8ICIiKSBkaWUgImJhZCB2ZXJzaW9uIGlkICckdmVyc2lvbiciIDs7IGVzYWMKCiMgVGhlIGNocm9vdCBpcyB3aG9sZSB3aGVuIGl0cyByb290IGFuZCBldmVyeSBiaW5kIGl0IG5lZWRzIGFyZSBtb3VudGVkOyBhIHJvb3QgdGhhdCBsb3N0IG9uZQojIChzb21lb25lIHVubW91bnRlZCAvZGV2LCBhIGNyYXNoIGhhbGYtd2F5IHRocm91Z2ggYSBtb3VudCkgaXMgcmVtb3VudGVkLCBuZXZlciBsZWZ0IGJyb2tlbi4Kd2hvbGUoKSB7CiAgICBsb2NhbCBkCiAgICBtb3VudGVkX2F0ICIkUk9PVCIgfHwgcmV0dXJuIDEKICAgIGZvciBkIGluIGRldiBwcm9jIHN5cyBydW47IGRvIG1vdW50ZWRfYXQgIiRST09ULyRkIiB8fCByZXR1cm4gMTsgZG9uZQp9CgpjdXJyZW50PSQobW91bnRlZF92ZXJzaW9uKQppZiBbICIkY3VycmVudCIgPSAiJHZlcnNpb24iIF07IHRoZW4KICAgIGlmIHdob2xlOyB0aGVuCiAgICAgICAgZWNobyB1bmNoYW5nZWQKICAgICAgICBleGl0IDAKICAgIGZpCiAgICBsb2cgInZlcnNpb24gJHZlcnNpb24gaXMgbW91bnRlZCBidXQgaXRzIGNocm9vdCBpcyBub3Qgd2hvbGU7IHJlbW91bnRpbmcgaXQiCmZpCmlmIFsgLW4gIiRjdXJyZW50IiBdIHx8IG1vdW50ZWRfYXQgIiRST09UIiB8fCBtb3VudGVkX2F0ICIkU0hBUkVEIjsgdGhlbgogICAgbG9nICJzd2l0Y2hpbmcgZnJvbSAke2N1cnJlbnQ6LWEgcGFydGlhbCBtb3VudH0gdG8gJHZlcnNpb24iCiAgICB1bW91bnRfYWxsCmZpCm1vdW50X3ZlcnNpb24gIiR2ZXJzaW9uIgpsb2cgInZlcnNpb24gJHZlcnNpb24gbW91bnRlZCBvbiAkUk9PVCIKZWNobyBjaGFuZ2VkCg== c5b74889360d335eb23730d859a055ffbbb2d1c60e386cd73cd2b78a7a008256 && scripts=1
put /usr/local/sbin/netroot-chroot 755 IyEvYmluL3NoCiMgbmV0cm9vdC1jaHJvb3QgQ01ELi4uOiBydW4gQ01EIChhbiBhYnNvbHV0ZSBwYXRoIGluc2lkZSB0aGUgaW1hZ2UpIGluIHRoaXMgYm9hcmQncyBuZXRyb290CiMgY2hyb290LCB3aXRoIGEgY2xlYW4gZW52aXJvbm1lbnQuIFdpdGhvdXQgQ01EOiBhIGxvZ2luIHNoZWxsLiBNYW5hZ2VkIGJ5IG5ldHJvb3QgZm9yCiMgcGktMDIuCiMgRXZlcnkgc21va2UgY2hlY2sgcnVucyB0aHJvdWdoIHRoaXMgc2NyaXB0LCBzbyBpdCBpcyBwbGFpbiBzaCBhbmQgZm9ya3Mgbm90aGluZyBiZWZvcmUgdGhlCiMgY2hyb290OiBvbiBhbiBlbXVsYXRlZCBib2FyZCwgYmFzaCBhbmQgYSBgbW91bnRwb2ludGAvYGNhdGAgZXhlYyBjb3N0IH44NSBtcyBwZXIgY29tbWFuZC4Kc2V0IC1ldQpST09UPS9ydW4vbmV0cm9vdC9yb290ClZFUlNJT049CmlmIFsgLXIgL3J1bi9uZXRyb290L21vdW50ZWQgXTsgdGhlbgogICAgcmVhZCAtciBWRVJTSU9OIDwgL3J1bi9uZXRyb290L21vdW50ZWQgfHwgdHJ1ZQpmaQpNT1VOVEVEPQp3aGlsZSByZWFkIC1yIF9pZCBfcGFyZW50IF9kZXYgX3Jvb3QgcG9pbnQgX3Jlc3Q7IGRvICAjIGZpZWxkIDUgb2YgbW91bnRpbmZvOiB0aGUgbW91bnQgcG9pbnQKICAgIGlmIFsgIiRwb2ludCIgPSAiJFJPT1QiIF07IHRoZW4KICAgICAgICBNT1VOVEVEPTEKICAgICAgICBicmVhawogICAgZmkKZG9uZSA8IC9wcm9jL3NlbGYvbW91bnRpbmZvCmlmIFsgLXogIiRNT1VOVEVEIiBdIHx8IFsgLXogIiRWRVJTSU9OIiBdOyB0aGVuCiAgICBlY2hvICJuZXRyb290LWNocm9vdDogbm8gdmVyc2lvbiBtb3VudGVkIG9uICRST09UIChzeXN0ZW1jdGwgc3RhdHVzIG5ldHJvb3QtbW91bnQpIiA+JjIKICAgIGV4aXQgMQpmaQpbICIkIyIgLWd0IDAgXSB8fCBzZXQgLS0gL2Jpbi9zaCAtbApleGVjIC91c3Ivc2Jpbi9jaHJvb3QgIiRST09UIiAvdXNyL2Jpbi9lbnYgLWkgXAogICAgSE9NRT0vcm9vdCBcCiAgICBQQVRIPS91c3IvbG9jYWwvc2JpbjovdXNyL2xvY2FsL2JpbjovdXNyL3NiaW46L3Vzci9iaW46L3NiaW46L2JpbiBcCiAgICBMQU5HPUMuVVRGLTggXAogICAgVEVSTT0iJHtURVJNOi1kdW1ifSIgXAogICAgTkVUUk9PVF9WRVJTSU9OPSIkVkVSU0lPTiIgXAogICAgIiRAIgo= dec6ee2fed3c1d2c86be9f5013c5c8a191ce8b97031eca68f0a5e247e71c27f7 && scripts=1
unit=0
put /etc/systemd/system/netroot-mount.service 644 IyBNYW5hZ2VkIGJ5IG5ldHJvb3QgKHJvbGUgbmV0cm9vdF9ib2FyZCkgZm9yIHBpLTAyLgpbVW5pdF0KRGVzY3JpcHRpb249bmV0cm9vdDogbW91bnQgdGhlIGFzc2lnbmVkIHZlcnNpb24gYW5kIHByZXBhcmUgaXRzIGNocm9vdApEb2N1bWVudGF0aW9uPW1hbjpuZnMoNSkgZmlsZTovLy91c3IvbG9jYWwvc2Jpbi9uZXRyb290LW1vdW50CldhbnRzPW5ldHdvcmstb25saW5lLnRhcmdldApBZnRlcj1uZXR3b3JrLW9ubGluZS50YXJnZXQKQmVmb3JlPW11bHRpLXVzZXIudGFyZ2V0CgpbU2VydmljZV0KVHlwZT1vbmVzaG90ClJlbWFpbkFmdGVyRXhpdD15ZXMKIyBuZXRyb290LW1vdW50IHJldHJpZXMgMTAgdGltZXMgaXRzZWxmIGFuZCBsb2dzIGVhY2ggZmFpbHVyZTsKIyB0aGUgc3RhcnQgdGltZW91dCBib3VuZHMgdGhlIHdob2xlIGF0dGVtcHQgc28gYSBtaXNzaW5nIHNlcnZlciBjYW5ub3QgaGFuZyB0aGUgYm9vdC4KRXhlY1N0YXJ0PS91c3IvbG9jYWwvc2Jpbi9uZXRyb290LW1vdW50CkV4ZWNTdG9wPS91c3IvbG9jYWwvc2Jpbi9uZXRyb290LW1vdW50IC0tdW1vdW50ClRpbWVvdXRTdGFydFNlYz0zMDAKVGltZW91dFN0b3BTZWM9NDAKU3lzbG9nSWRlbnRpZmllcj1uZXRyb290LW1vdW50CgpbSW5zdGFsbF0KV2FudGVkQnk9bXVsdGktdXNlci50YXJnZXQK aaa2bb4f80d66b408d1863d2a544c4069328fefc09cd86c0dcf3adeda05b4f9a && unit=1
[ "$PREPARE" = 1 ] || put /etc/netroot/assigned 644 ZmVkY2JhOTg3NjU0MzIxMAo= 944f54037ca91379f68ab5a7b09a34b891b485ce9e56f9eea2eed2bafe7619f2
if [ "$SET_HOSTNAME" = 1 ]; then
    put /etc/hostname 644 cGktMDIK 498107b64d9dc31b00a30db6e51627e6e4d1921390de508127deec5b02bb7c06
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
