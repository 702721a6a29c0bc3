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
put /usr/local/sbin/netroot-mount 755 IyEvYmluL2Jhc2gKIyBuZXRyb290LW1vdW50OiBtb3VudCB0aGlzIGJvYXJkJ3MgYXNzaWduZWQgbmV0cm9vdCB2ZXJzaW9uIGFuZCBwcmVwYXJlIGl0cyBjaHJvb3QuCiMgTWFuYWdlZCBieSBuZXRyb290IChyb2xlIG5ldHJvb3RfYm9hcmQpIGZvciBwaS0wMTsgbG9jYWwgZWRpdHMgYXJlIHJlcGxhY2VkLgojCiMgICBuZXRyb290LW1vdW50IFtWRVJTSU9OX0lEXSAgIG1vdW50IFZFUlNJT05fSUQgKGRlZmF1bHQ6IC9ldGMvbmV0cm9vdC9hc3NpZ25lZCk7IGlmIGFub3RoZXIKIyAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgdmVyc2lvbiBpcyBtb3VudGVkLCBzdG9wIHdoYXQgcnVucyBpbiB0aGUgY2hyb290LCB1bm1vdW50IGl0IGFuZAojICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICBtb3VudCB0aGUgbmV3IG9uZSAodGhlIHNhZmUgc3dpdGNoKS4gUHJpbnRzICJjaGFuZ2VkIiBvcgojICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAidW5jaGFuZ2VkIiBvbiBzdGRvdXQuCiMgICBuZXRyb290LW1vdW50IC0tdW1vdW50ICAgICAgIHN0b3Agd2hhdCBydW5zIGluIHRoZSBjaHJvb3QgYW5kIHVubW91bnQgZXZlcnl0aGluZy4KIyAgIG5ldHJvb3QtbW91bnQgLS1zdGF0dXMgICAgICAgSlNPTjogYXNzaWduZWQsIG1vdW50ZWQsIHJvb3QsIHNoYXJlZCwgaW1hZ2UsIHNlcnZlci4KIwojIExheW91dDogdGhlIGltYWdlJ3MgZXhwb3J0IGlzIG1vdW50ZWQgUkVBRC1PTkxZIGF0ICRTSEFSRUQ7IHRoZSBjaHJvb3Qgcm9vdCAkUk9PVCBpcyBhbgojIG92ZXJsYXlmcyB3aG9zZSBsb3dlciBsYXllciBpcyAkU0hBUkVEL3ZlcnNpb25zLzxpZD4gYW5kIHdob3NlIHdyaXRhYmxlIGxheWVyIGlzIHRoaXMgYm9hcmQncwojIG93biAoJExBWUVSX0RJUi88aWQ+IG9uIHRoZSBib2FyZCdzIGRpc2ssIG9yIHRtcGZzKSwgc28gYm9hcmRzIG5ldmVyIHNlZSBlYWNoIG90aGVyJ3Mgd3JpdGVzCiMgYW5kIG5vdGhpbmcgYSBib2FyZCB3cml0ZXMgcmVhY2hlcyB0aGUgc2VydmVyLgpzZXQgLWV1byBwaXBlZmFpbAoKU0VSVkVSPTEwLjc3LjAuMgpFWFBPUlQ9L3Nydi9uZXRyb290L3Jhc3BiaWFuCklNQUdFPXJhc3BiaWFuCk9QVElPTlM9dmVycz00LjEscHJvdG89dGNwLGhhcmQsdGltZW89NjAwLHJldHJhbnM9Mixyc2l6ZT0xMDQ4NTc2LHdzaXplPTEwNDg1NzYscm8KTEFZRVI9ZGlzawpMQVlFUl9ESVI9L3Zhci9saWIvbmV0cm9vdC9sYXllcnMKUkVUUklFUz0xMApSRVRSWV9ERUxBWT0zCkFUVEVNUFRfVElNRU9VVD0yMApTVE9QX1RJTUVPVVQ9MTAKClJVTj0vcnVuL25ldHJvb3QKU0hBUkVEPSRSVU4vc2hhcmVkClJPT1Q9JFJVTi9yb290Ck1PVU5URUQ9JFJVTi9tb3VudGVkCkFTU0lHTkVEPS9ldGMvbmV0cm9vdC9hc3NpZ25lZAoKbG9nKCkgeyBlY2hvICJuZXRyb290LW1vdW50OiAkKiIgPiYyOyB9CmRpZSgpIHsgbG9nICJGQUlMRUQ6ICQqIjsgZXhpdCAxOyB9Cgptb3VudGVkX3ZlcnNpb24oKSB7CiAgICBpZiBtb3VudHBvaW50IC1xICIkUk9PVCIgJiYgWyAtcyAiJE1PVU5URUQiIF07IHRoZW4gY2F0ICIkTU9VTlRFRCI7IGZpCn0KCiMgRXZlcnkgcHJvY2VzcyB3aG9zZSByb290IGRpcmVjdG9yeSBpcyBpbnNpZGUgdGhlIGNocm9vdCAoc3RhcnRlZCBieSBuZXRyb290LWNocm9vdCwgYnkgU1NICiMgc2Vzc2lvbnMsIGJ5IGFueXRoaW5nKTogVEVSTSwgd2FpdCwgdGhlbiBLSUxMLCBzbyB0aGUgdW5tb3VudCBjYW5ub3QgZmFpbCB3aXRoIEVCVVNZLgojIE9uZSBmaW5kIGZvciBhbGwgcHJvY2Vzc2VzOiBhIHJlYWRsaW5rIHBlciBwcm9jZXNzIGNvc3QgfjIuNSBzIG9uIGFuIGVtdWxhdGVkIGJvYXJkLiBBIHByb2Nlc3MKIyB0aGF0IGV4aXRzIG1lYW53aGlsZSBtYWtlcyBmaW5kIGNvbXBsYWluOyB0aGF0IGlzIG5vdCBhbiBlcnJvciBoZXJlLgpjaHJvb3RfcGlkcygpIHsKICAgIGxvY2FsIHAKICAgIHsgZmluZCAvcHJvYy9bMC05XSovcm9vdCAtbWF4ZGVwdGggMCBcKCAtbG5hbWUgIiRST09UIiAtbyAtbG5hbWUgIiRST09ULyoiIFwpIFwKICAgICAgICAtcHJpbnRmICclaFxuJyAyPi9kZXYvbnVsbCB8fCB0cnVlOyB9IHwgd2hpbGUgcmVhZCAtciBwOyBkbyBlY2hvICIke3AjL3Byb2MvfSI7IGRvbmUKfQoKc3RvcF9jaHJvb3QoKSB7CiAgICBsb2NhbCBwaWRzIHdhaXRlZD0wCiAgICBwaWRzPSQoY2hyb290X3BpZHMpCiAgICBbIC16ICIkcGlkcyIgXSAmJiByZXR1cm4gMAogICAgbG9nICJzdG9wcGluZyBwcm9jZXNzZXMgaW4gdGhlIGNocm9vdDogJChlY2hvICRwaWRzKSIKICAgIGtpbGwgLVRFUk0gJHBpZHMgMj4vZGV2L251bGwgfHwgdHJ1ZQogICAgd2hpbGUgWyAtbiAiJChjaHJvb3RfcGlkcykiIF0gJiYgWyAiJHdhaXRlZCIgLWx0ICIkU1RPUF9USU1FT1VUIiBdOyBkbwogICAgICAgIHNsZWVwIDEKICAgICAgICB3YWl0ZWQ9JCgod2FpdGVkICsgMSkpCiAgICBkb25lCiAgICBwaWRzPSQoY2hyb290X3BpZHMpCiAgICBpZiBbIC1uICIkcGlkcyIgXTsgdGhlbgogICAgICAgIGxvZyAia2lsbGluZyBwcm9jZXNzZXMgdGhhdCBpZ25vcmVkIFNJR1RFUk06ICQoZWNobyAkcGlkcykiCiAgICAgICAga2lsbCAtS0lMTCAkcGlkcyAyPi9kZXYvbnVsbCB8fCB0cnVlCiAgICAgICAgc2xlZXAgMQogICAgZmkKfQoKdW1vdW50X2FsbCgpIHsKICAgIHN0b3BfY2hyb290CiAgICBybSAtZiAiJE1PVU5URUQiCiAgICBpZiBtb3VudHBvaW50IC1xICIkUk9PVCI7IHRoZW4gdW1vdW50IC1SICIkUk9PVCIgfHwgZGllICJjYW5ub3QgdW5tb3VudCAkUk9PVCI7IGZpCiAgICBpZiBtb3VudHBvaW50IC1xICIkUlVOL2xheWVyIjsgdGhlbiB1bW91bnQgIiRSVU4vbGF5ZXIiOyBmaQogICAgaWYgbW91bnRwb2ludCAtcSAiJFNIQVJFRCI7IHRoZW4gdW1vdW50ICIkU0hBUkVEIiB8fCB1bW91bnQgLWwgIiRTSEFSRUQiOyBmaQp9Cgptb3VudF9zaGFyZWQoKSB7CiAgICBsb2NhbCB0cnk9MSBlcnIKICAgIG1rZGlyIC1wICIkU0hBUkVEIgogICAgbW91bnRwb2ludCAtcSAiJFNIQVJFRCIgJiYgcmV0dXJuIDAKICAgIFsgLWQgL3N5cy9tb2R1bGUvbmZzIF0gfHwgbW9kcHJvYmUgLXEgbmZzIDI+L2Rldi9udWxsIHx8IHRydWUgICMgbG9hZGVkOiBubyBleGVjCiAgICB3aGlsZSA6OyBkbwogICAgICAgIGlmIGVycj0kKHRpbWVvdXQgIiRBVFRFTVBUX1RJTUVPVVQiIG1vdW50IC10IG5mcyAtbyAiJE9QVElPTlMiICIkU0VSVkVSOiRFWFBPUlQiICIkU0hBUkVEIiAyPiYxKTsgdGhlbgogICAgICAgICAgICBsb2cgIm1vdW50ZWQgJFNFUlZFUjokRVhQT1JUICh0cnkgJHRyeSwgJE9QVElPTlMpIgogICAgICAgICAgICByZXR1cm4gMAogICAgICAgIGZpCiAgICAgICAgbG9nICJ0cnkgJHRyeS8kUkVUUklFUzogbW91bnQgJFNFUlZFUjokRVhQT1JUIGZhaWxlZDogJHtlcnI6LXRpbWVkIG91dCBhZnRlciAke0FUVEVNUFRfVElNRU9VVH1zfSIKICAgICAgICBbICIkdHJ5IiAtZ2UgIiRSRVRSSUVTIiBdICYmIGRpZSAiY2Fubm90IG1vdW50ICRTRVJWRVI6JEVYUE9SVCBhZnRlciAkUkVUUklFUyB0cmllczsgaXMgdGhlIE5GUyBzZXJ2ZXIgdXAgYW5kIGRvZXMgaXQgZXhwb3J0IHRvIHRoaXMgYm9hcmQ/IChuZXRyb290IHByb3Zpc2lvbikiCiAgICAgICAgdHJ5PSQoKHRyeSArIDEpKQogICAgICAgIHNsZWVwICIkUkVUUllfREVMQVkiCiAgICBkb25lCn0KCiMgQmluZCB0aGUgYm9hcmQncyBvd24gZmlsZSBvdmVyIHRoZSBpbWFnZSdzLCByZWFkLW9ubHksIHNvIHRoZSBjaHJvb3Qgc2VlcyB0aGlzIGJvYXJkJ3MKIyBpZGVudGl0eSBhbmQgY2Fubm90IGNoYW5nZSBpdDsgdGhlIGZpbGUgaXMgY3JlYXRlZCBpbiB0aGUgd3JpdGFibGUgbGF5ZXIgd2hlbiB0aGUgaW1hZ2UgaGFzCiMgbm9uZSAob3IgYSBkYW5nbGluZyBzeW1saW5rLCBhcyBjb250YWluZXIgaW1hZ2VzIG9mdGVuIGhhdmUgZm9yIHJlc29sdi5jb25mKS4KYmluZF9maWxlKCkgewogICAgbG9jYWwgc3JjPSQxIGRzdD0kUk9PVCQyCiAgICBbIC1lICIkc3JjIiBdIHx8IHJldHVybiAwCiAgICBpZiBbIC1MICIkZHN0IiBdIHx8IFsgISAtZiAiJGRzdCIgXTsgdGhlbgogICAgICAgIHJtIC1mICIkZHN0IgogICAgICAgIDogPiIkZHN0IgogICAgZmkKICAgICMgdXRpbC1saW51eCA+PSAyLjI3IHJlbW91bnRzIGl0IHJlYWQtb25seSBpdHNlbGYsIGFzIHRoZSBzZWNvbmQgY2FsbCBkaWQKICAgIG1vdW50IC0tYmluZCAtbyBybyAiJHNyYyIgIiRkc3QiCn0KCm1vdW50X3ZlcnNpb24oKSB7CiAgICBsb2NhbCB2ZXJzaW9uPSQxIGxvd2VyIHVwcGVyIHdvcmsKICAgIG1vdW50X3NoYXJlZAogICAgbG93ZXI9JFNIQVJFRC92ZXJzaW9ucy8kdmVyc2lvbgogICAgWyAtZCAiJGxvd2VyIiBdIHx8IGRpZSAidmVyc2lvbiAkdmVyc2lvbiBpcyBub3QgZXhwb3J0ZWQgaW4gJFNFUlZFUjokRVhQT1JUIChzZWUgbmV0cm9vdCB2ZXJzaW9ucykiCiAgICBpZiBbICIkTEFZRVIiID0gdG1wZnMgXTsgdGhlbgogICAgICAgIG1rZGlyIC1wICIkUlVOL2xheWVyIgogICAgICAgIG1vdW50cG9pbnQgLXEgIiRSVU4vbGF5ZXIiIHx8IG1vdW50IC10IHRtcGZzIC1vIG1vZGU9MDc1NSBuZXRyb290LWxheWVyICIkUlVOL2xheWVyIgogICAgICAgIHVwcGVyPSRSVU4vbGF5ZXIvdXBwZXIKICAgICAgICB3b3JrPSRSVU4vbGF5ZXIvd29yawogICAgZWxzZQogICAgICAgIHVwcGVyPSRMQVlFUl9ESVIvJHZlcnNpb24vdXBwZXIKICAgICAgICB3b3JrPSRMQVlFUl9ESVIvJHZlcnNpb24vd29yawogICAgZmkKICAgIG1rZGlyIC1wICIkdXBwZXIiICIkd29yayIgIiRST09UIgogICAgWyAtZCAvc3lzL21vZHVsZS9vdmVybGF5IF0gfHwgbW9kcHJvYmUgLXEgb3ZlcmxheSAyPi9kZXYvbnVsbCB8fCB0cnVlCiAgICBtb3VudCAtdCBvdmVybGF5IG5ldHJvb3QgLW8gImxvd2VyZGlyPSRsb3dlcix1cHBlcmRpcj0kdXBwZXIsd29ya2Rpcj0kd29yayIgIiRST09UIiBcCiAgICAgICAgfHwgZGllICJjYW5ub3QgbW91bnQgdGhlIG92ZXJsYXkgb2YgJHZlcnNpb24gb24gJFJPT1QiCiAgICBsb2NhbCBkCiAgICBta2RpciAtcCAiJFJPT1QvZGV2IiAiJFJPT1QvcHJvYyIgIiRST09UL3N5cyIgIiRST09UL3J1biIgIiRST09UL2V0YyIKICAgIGZvciBkIGluIGRldiBwcm9jIHN5czsgZG8KICAgICAgICAjIHJzbGF2ZTogdW5tb3VudGluZyB0aGUgY2hyb290IG11c3QgbmV2ZXIgcHJvcGFnYXRlIGJhY2sgdG8gdGhlIGJvYXJkJ3Mgb3duIG1vdW50cwogICAgICAgICMgKG9uZSBtb3VudCg4KSBjYWxsOiB0aGUgYmluZCwgdGhlbiB0aGUgcHJvcGFnYXRpb24gY2hhbmdlLCBhcyB0d28gc2VwYXJhdGUgb25lcyBkaWQpCiAgICAgICAgbW91bnQgLS1yYmluZCAtLW1ha2UtcnNsYXZlICIvJGQiICIkUk9PVC8kZCIKICAgIGRvbmUKICAgIG1vdW50IC10IHRtcGZzIC1vIG1vZGU9MDc1NSxub3N1aWQsbm9kZXYgbmV0cm9vdC1ydW4gIiRST09UL3J1biIKICAgIG1rZGlyIC1wICIkUk9PVC9ydW4vbmV0cm9vdCIKICAgIGVjaG8gIiR2ZXJzaW9uIiA+IiRST09UL3J1bi9uZXRyb290L3ZlcnNpb24iCiAgICAjIFRoZSBtYW5pZmVzdCBzdGF5cyBvbiB0aGUgc2VydmVyIChyZWFkLW9ubHkgYmluZCwgbm8gY29weSBvZiBhIG11bHRpLU1CIGZpbGUpLgogICAgaWYgWyAtZiAiJFNIQVJFRC92ZXJzaW9ucy8kdmVyc2lvbi5qc29uIiBdOyB0aGVuCiAgICAgICAgOiA+IiRST09UL3J1bi9uZXRyb290L21hbmlmZXN0Lmpzb24iCiAgICAgICAgbW91bnQgLS1iaW5kICIkU0hBUkVEL3ZlcnNpb25zLyR2ZXJzaW9uLmpzb24iICIkUk9PVC9ydW4vbmV0cm9vdC9tYW5pZmVzdC5qc29uIgogICAgZmkKICAgIGJpbmRfZmlsZSAvZXRjL2hvc3RuYW1lIC9ldGMvaG9zdG5hbWUKICAgIGJpbmRfZmlsZSAvZXRjL21hY2hpbmUtaWQgL2V0Yy9tYWNoaW5lLWlkCiAgICBiaW5kX2ZpbGUgIiQocmVhZGxpbmsgLWYgL2V0Yy9yZXNvbHYuY29uZikiIC9ldGMvcmVzb2x2LmNvbmYKICAgIGVjaG8gIiR2ZXJzaW9uIiA+IiRNT1VOVEVEIgp9CgpzdGF0dXMoKSB7CiAgICBsb2NhbCBhc3NpZ25lZD0iIiBtb3VudGVkCiAgICBbIC1zICIkQVNTSUdORUQiIF0gJiYgYXNzaWduZWQ9JChjYXQgIiRBU1NJR05FRCIpCiAgICBtb3VudGVkPSQobW91bnRlZF92ZXJzaW9uKQogICAgcHJpbnRmICd7ImFzc2lnbmVkIjogIiVzIiwgIm1vdW50ZWQiOiAiJXMiLCAicm9vdCI6ICIlcyIsICJzaGFyZWQiOiAiJXMiLCAiaW1hZ2UiOiAiJXMiLCAic2VydmVyIjogIiVzIn1cbicgXAogICAgICAgICIkYXNzaWduZWQiICIkbW91bnRlZCIgIiRST09UIiAiJFNIQVJFRCIgIiRJTUFHRSIgIiRTRVJWRVI6JEVYUE9SVCIKfQoKY2FzZSAiJHsxOi19IiBpbgotLXN0YXR1cykgc3RhdHVzOyBleGl0IDAgOzsKLS11bW91bnQpIHVtb3VudF9hbGw7IGV4aXQgMCA7OwotaCB8IC0taGVscCkgc2VkIC1uICcyLDExcCcgIiQwIjsgZXhpdCAwIDs7Ci0qKSBkaWUgInVua25vd24gb3B0aW9uICQxIChzZWUgLS1oZWxwKSIgOzsKZXNhYwoKdmVyc2lvbj0kezE6LX0KaWYgWyAteiAiJHZlcnNpb24iIF07IHRoZW4KICAgIFsgLXMgIiRBU1NJR05FRCIgXSB8fCBkaWUgIm5vIHZlcnNpb24gYXNzaWduZWQgaW4gJEFTU0lHTkVEIChydW4gbmV0cm9vdCBwcm92aXNpb24pIgogICAgdmVyc2lvbj0kKGNhdCAiJEFTU0lHTkVEIikKZmkKY2FzZSAiJHZlcnNpb24iIGluICpbITAtOWEtZl0qIHwgIiIpIGRpZSAiYmFkIHZlcnNpb24gaWQgJyR2ZXJzaW9uJyIgOzsgZXNhYwoKIyBUaGUgY2hyb290IGlzIHdob2xlIHdoZW4gaXRzIHJvb3QgYW5kIGV2ZXJ5IGJpbmQgaXQgbmVlZHMgYXJlIG1vdW50ZWQ7IGEgcm9vdCB0aGF0IGxvc3Qgb25lCiMgKHNvbWVvbmUgdW5tb3VudGVkIC9kZXYsIGEgY3Jhc2ggaGFsZi13YXkgdGhyb3VnaCBhIG1vdW50KSBpcyByZW1vdW50ZWQsIG5ldmVyIGxlZnQgYnJva2VuLgp3aG9sZSgpIHsKICAgIGxvY2FsIGQKICAgIG1vdW50cG9pbnQgLXEgIiRST09UIiB8fCByZXR1cm4gMQogICAgZm9yIGQgaW4gZGV2IHByb2Mgc3lzIHJ1bjsgZG8gbW91bnRwb2ludCAtcSAiJFJPT1QvJGQiIHx8IHJldHVybiAxOyBkb25lCn0KCmN1cnJlbnQ9JChtb3VudGVkX3ZlcnNpb24pCmlmIFsgIiRjdXJyZW50IiA9ICIkdmVyc2lvbiIgXTsgdGhlbgogICAgaWYgd2hvbGU7IHRoZW4KICAgICAgICBlY2hvIHVuY2hhbmdlZAogICAgICAgIGV4aXQgMAogICAgZmkKICAgIGxvZyAidmVyc2lvbiAkdmVyc2lvbiBpcyBtb3VudGVkIGJ1dCBpdHMgY2hyb290IGlzIG5vdCB3aG9sZTsgcmVtb3VudGluZyBpdCIKZmkKaWYgWyAtbiAiJGN1cnJlbnQiIF0gfHwgbW91bnRwb2ludCAtcSAiJFJPT1QiIHx8IG1vdW50cG9pbnQgLXEgIiRTSEFSRUQiOyB0aGVuCiAgICBsb2cgInN3aXRjaGluZyBmcm9tICR7Y3VycmVudDotYSBwYXJ0aWFsIG1vdW50fSB0byAkdmVyc2lvbiIKICAgIHVtb3VudF9hbGwKZmkKbW91bnRfdmVyc2lvbiAiJHZlcnNpb24iCmxvZyAidmVyc2lvbiAkdmVyc2lvbiBtb3VudGVkIG9uICRST09UIgplY2hvIGNoYW5nZWQK 3ab7ac9515ab2a767b8f2d70b61f1d10107500dee90244b78baf47a2987e09ba && scripts=1
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
