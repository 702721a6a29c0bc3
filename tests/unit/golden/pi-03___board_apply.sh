set -u
CHECK=0
DIFF=0
VERSION=0123456789abcdef
NAME=pi-03
INSTALL=1
SET_HOSTNAME=1
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export SYSTEMD_COLORS=0 SYSTEMD_PAGER=

# One provision at a time per board: a second run's `systemctl restart` would cancel the first
# one's start job (SIGTERM to netroot-mount halfway through a switch).
mkdir -p /run/netroot
exec 9>/run/netroot/.provision.lock
flock -w 600 9 || { echo "netroot: another provision of this board holds /run/netroot/.provision.lock" >&2; exit 1; }

changed() { echo "changed: $*"; }
fail() { echo "netroot: $*" >&2; exit 1; }

# put PATH MODE BASE64: write the file when content or mode differ (atomically: same-dir rename)
put() {
    local path=$1 mode=$2 new dir
    dir=$(dirname "$path")
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

mounted_before=""
if mountpoint -q /run/netroot/root && [ -s /run/netroot/mounted ]; then
    mounted_before=$(cat /run/netroot/mounted)
fi

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
put /usr/local/sbin/netroot-mount 755 IyEvYmluL2Jhc2gKIyBuZXRyb290LW1vdW50OiBtb3VudCB0aGlzIGJvYXJkJ3MgYXNzaWduZWQgbmV0cm9vdCB2ZXJzaW9uIGFuZCBwcmVwYXJlIGl0cyBjaHJvb3QuCiMgTWFuYWdlZCBieSBuZXRyb290IChyb2xlIG5ldHJvb3RfYm9hcmQpIGZvciBwaS0wMzsgbG9jYWwgZWRpdHMgYXJlIHJlcGxhY2VkLgojCiMgICBuZXRyb290LW1vdW50IFtWRVJTSU9OX0lEXSAgIG1vdW50IFZFUlNJT05fSUQgKGRlZmF1bHQ6IC9ldGMvbmV0cm9vdC9hc3NpZ25lZCk7IGlmIGFub3RoZXIKIyAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgdmVyc2lvbiBpcyBtb3VudGVkLCBzdG9wIHdoYXQgcnVucyBpbiB0aGUgY2hyb290LCB1bm1vdW50IGl0IGFuZAojICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICBtb3VudCB0aGUgbmV3IG9uZSAodGhlIHNhZmUgc3dpdGNoKS4gUHJpbnRzICJjaGFuZ2VkIiBvcgojICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAidW5jaGFuZ2VkIiBvbiBzdGRvdXQuCiMgICBuZXRyb290LW1vdW50IC0tdW1vdW50ICAgICAgIHN0b3Agd2hhdCBydW5zIGluIHRoZSBjaHJvb3QgYW5kIHVubW91bnQgZXZlcnl0aGluZy4KIyAgIG5ldHJvb3QtbW91bnQgLS1zdGF0dXMgICAgICAgSlNPTjogYXNzaWduZWQsIG1vdW50ZWQsIHJvb3QsIHNoYXJlZCwgaW1hZ2UsIHNlcnZlci4KIwojIExheW91dDogdGhlIGltYWdlJ3MgZXhwb3J0IGlzIG1vdW50ZWQgUkVBRC1PTkxZIGF0ICRTSEFSRUQ7IHRoZSBjaHJvb3Qgcm9vdCAkUk9PVCBpcyBhbgojIG92ZXJsYXlmcyB3aG9zZSBsb3dlciBsYXllciBpcyAkU0hBUkVEL3ZlcnNpb25zLzxpZD4gYW5kIHdob3NlIHdyaXRhYmxlIGxheWVyIGlzIHRoaXMgYm9hcmQncwojIG93biAoJExBWUVSX0RJUi88aWQ+IG9uIHRoZSBib2FyZCdzIGRpc2ssIG9yIHRtcGZzKSwgc28gYm9hcmRzIG5ldmVyIHNlZSBlYWNoIG90aGVyJ3Mgd3JpdGVzCiMgYW5kIG5vdGhpbmcgYSBib2FyZCB3cml0ZXMgcmVhY2hlcyB0aGUgc2VydmVyLgpzZXQgLWV1byBwaXBlZmFpbAoKU0VSVkVSPTEwLjc3LjAuMgpFWFBPUlQ9L3Nydi9uZXRyb290L290aGVyCklNQUdFPW90aGVyCk9QVElPTlM9dmVycz00LjEscHJvdG89dGNwLGhhcmQsdGltZW89NjAwLHJldHJhbnM9Mixyc2l6ZT0xMDQ4NTc2LHdzaXplPTEwNDg1NzYsbm9hdGltZSxuY29ubmVjdD0yLHJvCkxBWUVSPWRpc2sKTEFZRVJfRElSPS92YXIvbGliL25ldHJvb3QvbGF5ZXJzClJFVFJJRVM9MTAKUkVUUllfREVMQVk9MwpBVFRFTVBUX1RJTUVPVVQ9MjAKU1RPUF9USU1FT1VUPTEwCgpSVU49L3J1bi9uZXRyb290ClNIQVJFRD0kUlVOL3NoYXJlZApST09UPSRSVU4vcm9vdApNT1VOVEVEPSRSVU4vbW91bnRlZApBU1NJR05FRD0vZXRjL25ldHJvb3QvYXNzaWduZWQKCmxvZygpIHsgZWNobyAibmV0cm9vdC1tb3VudDogJCoiID4mMjsgfQpkaWUoKSB7IGxvZyAiRkFJTEVEOiAkKiI7IGV4aXQgMTsgfQoKbW91bnRlZF92ZXJzaW9uKCkgewogICAgaWYgbW91bnRwb2ludCAtcSAiJFJPT1QiICYmIFsgLXMgIiRNT1VOVEVEIiBdOyB0aGVuIGNhdCAiJE1PVU5URUQiOyBmaQp9CgojIEV2ZXJ5IHByb2Nlc3Mgd2hvc2Ugcm9vdCBkaXJlY3RvcnkgaXMgaW5zaWRlIHRoZSBjaHJvb3QgKHN0YXJ0ZWQgYnkgbmV0cm9vdC1jaHJvb3QsIGJ5IFNTSAojIHNlc3Npb25zLCBieSBhbnl0aGluZyk6IFRFUk0sIHdhaXQsIHRoZW4gS0lMTCwgc28gdGhlIHVubW91bnQgY2Fubm90IGZhaWwgd2l0aCBFQlVTWS4KIyBPbmUgZmluZCBmb3IgYWxsIHByb2Nlc3NlczogYSByZWFkbGluayBwZXIgcHJvY2VzcyBjb3N0IH4yLjUgcyBvbiBhbiBlbXVsYXRlZCBib2FyZC4gQSBwcm9jZXNzCiMgdGhhdCBleGl0cyBtZWFud2hpbGUgbWFrZXMgZmluZCBjb21wbGFpbjsgdGhhdCBpcyBub3QgYW4gZXJyb3IgaGVyZS4KY2hyb290X3BpZHMoKSB7CiAgICBsb2NhbCBwCiAgICB7IGZpbmQgL3Byb2MvWzAtOV0qL3Jvb3QgLW1heGRlcHRoIDAgXCggLWxuYW1lICIkUk9PVCIgLW8gLWxuYW1lICIkUk9PVC8qIiBcKSBcCiAgICAgICAgLXByaW50ZiAnJWhcbicgMj4vZGV2L251bGwgfHwgdHJ1ZTsgfSB8IHdoaWxlIHJlYWQgLXIgcDsgZG8gZWNobyAiJHtwIy9wcm9jL30iOyBkb25lCn0KCnN0b3BfY2hyb290KCkgewogICAgbG9jYWwgcGlkcyB3YWl0ZWQ9MAogICAgcGlkcz0kKGNocm9vdF9waWRzKQogICAgWyAteiAiJHBpZHMiIF0gJiYgcmV0dXJuIDAKICAgIGxvZyAic3RvcHBpbmcgcHJvY2Vzc2VzIGluIHRoZSBjaHJvb3Q6ICQoZWNobyAkcGlkcykiCiAgICBraWxsIC1URVJNICRwaWRzIDI+L2Rldi9udWxsIHx8IHRydWUKICAgIHdoaWxlIFsgLW4gIiQoY2hyb290X3BpZHMpIiBdICYmIFsgIiR3YWl0ZWQiIC1sdCAiJFNUT1BfVElNRU9VVCIgXTsgZG8KICAgICAgICBzbGVlcCAxCiAgICAgICAgd2FpdGVkPSQoKHdhaXRlZCArIDEpKQogICAgZG9uZQogICAgcGlkcz0kKGNocm9vdF9waWRzKQogICAgaWYgWyAtbiAiJHBpZHMiIF07IHRoZW4KICAgICAgICBsb2cgImtpbGxpbmcgcHJvY2Vzc2VzIHRoYXQgaWdub3JlZCBTSUdURVJNOiAkKGVjaG8gJHBpZHMpIgogICAgICAgIGtpbGwgLUtJTEwgJHBpZHMgMj4vZGV2L251bGwgfHwgdHJ1ZQogICAgICAgIHNsZWVwIDEKICAgIGZpCn0KCnVtb3VudF9hbGwoKSB7CiAgICBzdG9wX2Nocm9vdAogICAgcm0gLWYgIiRNT1VOVEVEIgogICAgaWYgbW91bnRwb2ludCAtcSAiJFJPT1QiOyB0aGVuIHVtb3VudCAtUiAiJFJPT1QiIHx8IGRpZSAiY2Fubm90IHVubW91bnQgJFJPT1QiOyBmaQogICAgaWYgbW91bnRwb2ludCAtcSAiJFJVTi9sYXllciI7IHRoZW4gdW1vdW50ICIkUlVOL2xheWVyIjsgZmkKICAgIGlmIG1vdW50cG9pbnQgLXEgIiRTSEFSRUQiOyB0aGVuIHVtb3VudCAiJFNIQVJFRCIgfHwgdW1vdW50IC1sICIkU0hBUkVEIjsgZmkKfQoKbW91bnRfc2hhcmVkKCkgewogICAgbG9jYWwgdHJ5PTEgZXJyCiAgICBta2RpciAtcCAiJFNIQVJFRCIKICAgIG1vdW50cG9pbnQgLXEgIiRTSEFSRUQiICYmIHJldHVybiAwCiAgICBtb2Rwcm9iZSAtcSBuZnMgMj4vZGV2L251bGwgfHwgdHJ1ZQogICAgd2hpbGUgOjsgZG8KICAgICAgICBpZiBlcnI9JCh0aW1lb3V0ICIkQVRURU1QVF9USU1FT1VUIiBtb3VudCAtdCBuZnMgLW8gIiRPUFRJT05TIiAiJFNFUlZFUjokRVhQT1JUIiAiJFNIQVJFRCIgMj4mMSk7IHRoZW4KICAgICAgICAgICAgbG9nICJtb3VudGVkICRTRVJWRVI6JEVYUE9SVCAodHJ5ICR0cnksICRPUFRJT05TKSIKICAgICAgICAgICAgcmV0dXJuIDAKICAgICAgICBmaQogICAgICAgIGxvZyAidHJ5ICR0cnkvJFJFVFJJRVM6IG1vdW50ICRTRVJWRVI6JEVYUE9SVCBmYWlsZWQ6ICR7ZXJyOi10aW1lZCBvdXQgYWZ0ZXIgJHtBVFRFTVBUX1RJTUVPVVR9c30iCiAgICAgICAgWyAiJHRyeSIgLWdlICIkUkVUUklFUyIgXSAmJiBkaWUgImNhbm5vdCBtb3VudCAkU0VSVkVSOiRFWFBPUlQgYWZ0ZXIgJFJFVFJJRVMgdHJpZXM7IGlzIHRoZSBORlMgc2VydmVyIHVwIGFuZCBkb2VzIGl0IGV4cG9ydCB0byB0aGlzIGJvYXJkPyAobmV0cm9vdCBwcm92aXNpb24pIgogICAgICAgIHRyeT0kKCh0cnkgKyAxKSkKICAgICAgICBzbGVlcCAiJFJFVFJZX0RFTEFZIgogICAgZG9uZQp9CgojIEJpbmQgdGhlIGJvYXJkJ3Mgb3duIGZpbGUgb3ZlciB0aGUgaW1hZ2UncywgcmVhZC1vbmx5LCBzbyB0aGUgY2hyb290IHNlZXMgdGhpcyBib2FyZCdzCiMgaWRlbnRpdHkgYW5kIGNhbm5vdCBjaGFuZ2UgaXQ7IHRoZSBmaWxlIGlzIGNyZWF0ZWQgaW4gdGhlIHdyaXRhYmxlIGxheWVyIHdoZW4gdGhlIGltYWdlIGhhcwojIG5vbmUgKG9yIGEgZGFuZ2xpbmcgc3ltbGluaywgYXMgY29udGFpbmVyIGltYWdlcyBvZnRlbiBoYXZlIGZvciByZXNvbHYuY29uZikuCmJpbmRfZmlsZSgpIHsKICAgIGxvY2FsIHNyYz0kMSBkc3Q9JFJPT1QkMgogICAgWyAtZSAiJHNyYyIgXSB8fCByZXR1cm4gMAogICAgaWYgWyAtTCAiJGRzdCIgXSB8fCBbICEgLWYgIiRkc3QiIF07IHRoZW4KICAgICAgICBybSAtZiAiJGRzdCIKICAgICAgICA6ID4iJGRzdCIKICAgIGZpCiAgICBtb3VudCAtLWJpbmQgIiRzcmMiICIkZHN0IgogICAgbW91bnQgLW8gcmVtb3VudCxiaW5kLHJvICIkZHN0Igp9Cgptb3VudF92ZXJzaW9uKCkgewogICAgbG9jYWwgdmVyc2lvbj0kMSBsb3dlciB1cHBlciB3b3JrCiAgICBtb3VudF9zaGFyZWQKICAgIGxvd2VyPSRTSEFSRUQvdmVyc2lvbnMvJHZlcnNpb24KICAgIFsgLWQgIiRsb3dlciIgXSB8fCBkaWUgInZlcnNpb24gJHZlcnNpb24gaXMgbm90IGV4cG9ydGVkIGluICRTRVJWRVI6JEVYUE9SVCAoc2VlIG5ldHJvb3QgdmVyc2lvbnMpIgogICAgaWYgWyAiJExBWUVSIiA9IHRtcGZzIF07IHRoZW4KICAgICAgICBta2RpciAtcCAiJFJVTi9sYXllciIKICAgICAgICBtb3VudHBvaW50IC1xICIkUlVOL2xheWVyIiB8fCBtb3VudCAtdCB0bXBmcyAtbyBtb2RlPTA3NTUgbmV0cm9vdC1sYXllciAiJFJVTi9sYXllciIKICAgICAgICB1cHBlcj0kUlVOL2xheWVyL3VwcGVyCiAgICAgICAgd29yaz0kUlVOL2xheWVyL3dvcmsKICAgIGVsc2UKICAgICAgICB1cHBlcj0kTEFZRVJfRElSLyR2ZXJzaW9uL3VwcGVyCiAgICAgICAgd29yaz0kTEFZRVJfRElSLyR2ZXJzaW9uL3dvcmsKICAgIGZpCiAgICBta2RpciAtcCAiJHVwcGVyIiAiJHdvcmsiICIkUk9PVCIKICAgIG1vZHByb2JlIC1xIG92ZXJsYXkgMj4vZGV2L251bGwgfHwgdHJ1ZQogICAgbW91bnQgLXQgb3ZlcmxheSBuZXRyb290IC1vICJsb3dlcmRpcj0kbG93ZXIsdXBwZXJkaXI9JHVwcGVyLHdvcmtkaXI9JHdvcmsiICIkUk9PVCIgXAogICAgICAgIHx8IGRpZSAiY2Fubm90IG1vdW50IHRoZSBvdmVybGF5IG9mICR2ZXJzaW9uIG9uICRST09UIgogICAgbG9jYWwgZAogICAgZm9yIGQgaW4gZGV2IHByb2Mgc3lzOyBkbwogICAgICAgIG1rZGlyIC1wICIkUk9PVC8kZCIKICAgICAgICBtb3VudCAtLXJiaW5kICIvJGQiICIkUk9PVC8kZCIKICAgICAgICAjIHJzbGF2ZTogdW5tb3VudGluZyB0aGUgY2hyb290IG11c3QgbmV2ZXIgcHJvcGFnYXRlIGJhY2sgdG8gdGhlIGJvYXJkJ3Mgb3duIG1vdW50cwogICAgICAgIG1vdW50IC0tbWFrZS1yc2xhdmUgIiRST09ULyRkIgogICAgZG9uZQogICAgbWtkaXIgLXAgIiRST09UL3J1biIgIiRST09UL2V0YyIKICAgIG1vdW50IC10IHRtcGZzIC1vIG1vZGU9MDc1NSxub3N1aWQsbm9kZXYgbmV0cm9vdC1ydW4gIiRST09UL3J1biIKICAgIG1rZGlyIC1wICIkUk9PVC9ydW4vbmV0cm9vdCIKICAgIGVjaG8gIiR2ZXJzaW9uIiA+IiRST09UL3J1bi9uZXRyb290L3ZlcnNpb24iCiAgICAjIFRoZSBtYW5pZmVzdCBzdGF5cyBvbiB0aGUgc2VydmVyIChyZWFkLW9ubHkgYmluZCwgbm8gY29weSBvZiBhIG11bHRpLU1CIGZpbGUpLgogICAgaWYgWyAtZiAiJFNIQVJFRC92ZXJzaW9ucy8kdmVyc2lvbi5qc29uIiBdOyB0aGVuCiAgICAgICAgOiA+IiRST09UL3J1bi9uZXRyb290L21hbmlmZXN0Lmpzb24iCiAgICAgICAgbW91bnQgLS1iaW5kICIkU0hBUkVEL3ZlcnNpb25zLyR2ZXJzaW9uLmpzb24iICIkUk9PVC9ydW4vbmV0cm9vdC9tYW5pZmVzdC5qc29uIgogICAgZmkKICAgIGJpbmRfZmlsZSAvZXRjL2hvc3RuYW1lIC9ldGMvaG9zdG5hbWUKICAgIGJpbmRfZmlsZSAvZXRjL21hY2hpbmUtaWQgL2V0Yy9tYWNoaW5lLWlkCiAgICBiaW5kX2ZpbGUgIiQocmVhZGxpbmsgLWYgL2V0Yy9yZXNvbHYuY29uZikiIC9ldGMvcmVzb2x2LmNvbmYKICAgIGVjaG8gIiR2ZXJzaW9uIiA+IiRNT1VOVEVEIgp9CgpzdGF0dXMoKSB7CiAgICBsb2NhbCBhc3NpZ25lZD0iIiBtb3VudGVkCiAgICBbIC1zICIkQVNTSUdORUQiIF0gJiYgYXNzaWduZWQ9JChjYXQgIiRBU1NJR05FRCIpCiAgICBtb3VudGVkPSQobW91bnRlZF92ZXJzaW9uKQogICAgcHJpbnRmICd7ImFzc2lnbmVkIjogIiVzIiwgIm1vdW50ZWQiOiAiJXMiLCAicm9vdCI6ICIlcyIsICJzaGFyZWQiOiAiJXMiLCAiaW1hZ2UiOiAiJXMiLCAic2VydmVyIjogIiVzIn1cbicgXAogICAgICAgICIkYXNzaWduZWQiICIkbW91bnRlZCIgIiRST09UIiAiJFNIQVJFRCIgIiRJTUFHRSIgIiRTRVJWRVI6JEVYUE9SVCIKfQoKY2FzZSAiJHsxOi19IiBpbgotLXN0YXR1cykgc3RhdHVzOyBleGl0IDAgOzsKLS11bW91bnQpIHVtb3VudF9hbGw7IGV4aXQgMCA7OwotaCB8IC0taGVscCkgc2VkIC1uICcyLDExcCcgIiQwIjsgZXhpdCAwIDs7Ci0qKSBkaWUgInVua25vd24gb3B0aW9uICQxIChzZWUgLS1oZWxwKSIgOzsKZXNhYwoKdmVyc2lvbj0kezE6LX0KaWYgWyAteiAiJHZlcnNpb24iIF07IHRoZW4KICAgIFsgLXMgIiRBU1NJR05FRCIgXSB8fCBkaWUgIm5vIHZlcnNpb24gYXNzaWduZWQgaW4gJEFTU0lHTkVEIChydW4gbmV0cm9vdCBwcm92aXNpb24pIgogICAgdmVyc2lvbj0kKGNhdCAiJEFTU0lHTkVEIikKZmkKY2FzZSAiJHZlcnNpb24iIGluICpbITAtOWEtZl0qIHwgIiIpIGRpZSAiYmFkIHZlcnNpb24gaWQgJyR2ZXJzaW9uJyIgOzsgZXNhYwoKIyBUaGUgY2hyb290IGlzIHdob2xlIHdoZW4gaXRzIHJvb3QgYW5kIGV2ZXJ5IGJpbmQgaXQgbmVlZHMgYXJlIG1vdW50ZWQ7IGEgcm9vdCB0aGF0IGxvc3Qgb25lCiMgKHNvbWVvbmUgdW5tb3VudGVkIC9kZXYsIGEgY3Jhc2ggaGFsZi13YXkgdGhyb3VnaCBhIG1vdW50KSBpcyByZW1vdW50ZWQsIG5ldmVyIGxlZnQgYnJva2VuLgp3aG9sZSgpIHsKICAgIGxvY2FsIGQKICAgIG1vdW50cG9pbnQgLXEgIiRST09UIiB8fCByZXR1cm4gMQogICAgZm9yIGQgaW4gZGV2IHByb2Mgc3lzIHJ1bjsgZG8gbW91bnRwb2ludCAtcSAiJFJPT1QvJGQiIHx8IHJldHVybiAxOyBkb25lCn0KCmN1cnJlbnQ9JChtb3VudGVkX3ZlcnNpb24pCmlmIFsgIiRjdXJyZW50IiA9ICIkdmVyc2lvbiIgXTsgdGhlbgogICAgaWYgd2hvbGU7IHRoZW4KICAgICAgICBlY2hvIHVuY2hhbmdlZAogICAgICAgIGV4aXQgMAogICAgZmkKICAgIGxvZyAidmVyc2lvbiAkdmVyc2lvbiBpcyBtb3VudGVkIGJ1dCBpdHMgY2hyb290IGlzIG5vdCB3aG9sZTsgcmVtb3VudGluZyBpdCIKZmkKaWYgWyAtbiAiJGN1cnJlbnQiIF0gfHwgbW91bnRwb2ludCAtcSAiJFJPT1QiIHx8IG1vdW50cG9pbnQgLXEgIiRTSEFSRUQiOyB0aGVuCiAgICBsb2cgInN3aXRjaGluZyBmcm9tICR7Y3VycmVudDotYSBwYXJ0aWFsIG1vdW50fSB0byAkdmVyc2lvbiIKICAgIHVtb3VudF9hbGwKZmkKbW91bnRfdmVyc2lvbiAiJHZlcnNpb24iCmxvZyAidmVyc2lvbiAkdmVyc2lvbiBtb3VudGVkIG9uICRST09UIgplY2hvIGNoYW5nZWQK && scripts=1
put /usr/local/sbin/netroot-chroot 755 IyEvYmluL3NoCiMgbmV0cm9vdC1jaHJvb3QgQ01ELi4uOiBydW4gQ01EIChhbiBhYnNvbHV0ZSBwYXRoIGluc2lkZSB0aGUgaW1hZ2UpIGluIHRoaXMgYm9hcmQncyBuZXRyb290CiMgY2hyb290LCB3aXRoIGEgY2xlYW4gZW52aXJvbm1lbnQuIFdpdGhvdXQgQ01EOiBhIGxvZ2luIHNoZWxsLiBNYW5hZ2VkIGJ5IG5ldHJvb3QgZm9yCiMgcGktMDMuCiMgRXZlcnkgc21va2UgY2hlY2sgcnVucyB0aHJvdWdoIHRoaXMgc2NyaXB0LCBzbyBpdCBpcyBwbGFpbiBzaCBhbmQgZm9ya3Mgbm90aGluZyBiZWZvcmUgdGhlCiMgY2hyb290OiBvbiBhbiBlbXVsYXRlZCBib2FyZCwgYmFzaCBhbmQgYSBgbW91bnRwb2ludGAvYGNhdGAgZXhlYyBjb3N0IH44NSBtcyBwZXIgY29tbWFuZC4Kc2V0IC1ldQpST09UPS9ydW4vbmV0cm9vdC9yb290ClZFUlNJT049CmlmIFsgLXIgL3J1bi9uZXRyb290L21vdW50ZWQgXTsgdGhlbgogICAgcmVhZCAtciBWRVJTSU9OIDwgL3J1bi9uZXRyb290L21vdW50ZWQgfHwgdHJ1ZQpmaQpNT1VOVEVEPQp3aGlsZSByZWFkIC1yIF9pZCBfcGFyZW50IF9kZXYgX3Jvb3QgcG9pbnQgX3Jlc3Q7IGRvICAjIGZpZWxkIDUgb2YgbW91bnRpbmZvOiB0aGUgbW91bnQgcG9pbnQKICAgIGlmIFsgIiRwb2ludCIgPSAiJFJPT1QiIF07IHRoZW4KICAgICAgICBNT1VOVEVEPTEKICAgICAgICBicmVhawogICAgZmkKZG9uZSA8IC9wcm9jL3NlbGYvbW91bnRpbmZvCmlmIFsgLXogIiRNT1VOVEVEIiBdIHx8IFsgLXogIiRWRVJTSU9OIiBdOyB0aGVuCiAgICBlY2hvICJuZXRyb290LWNocm9vdDogbm8gdmVyc2lvbiBtb3VudGVkIG9uICRST09UIChzeXN0ZW1jdGwgc3RhdHVzIG5ldHJvb3QtbW91bnQpIiA+JjIKICAgIGV4aXQgMQpmaQpbICIkIyIgLWd0IDAgXSB8fCBzZXQgLS0gL2Jpbi9zaCAtbApleGVjIC91c3Ivc2Jpbi9jaHJvb3QgIiRST09UIiAvdXNyL2Jpbi9lbnYgLWkgXAogICAgSE9NRT0vcm9vdCBcCiAgICBQQVRIPS91c3IvbG9jYWwvc2JpbjovdXNyL2xvY2FsL2JpbjovdXNyL3NiaW46L3Vzci9iaW46L3NiaW46L2JpbiBcCiAgICBMQU5HPUMuVVRGLTggXAogICAgVEVSTT0iJHtURVJNOi1kdW1ifSIgXAogICAgTkVUUk9PVF9WRVJTSU9OPSIkVkVSU0lPTiIgXAogICAgIiRAIgo= && scripts=1
unit=0
put /etc/systemd/system/netroot-mount.service 644 IyBNYW5hZ2VkIGJ5IG5ldHJvb3QgKHJvbGUgbmV0cm9vdF9ib2FyZCkgZm9yIHBpLTAzLgpbVW5pdF0KRGVzY3JpcHRpb249bmV0cm9vdDogbW91bnQgdGhlIGFzc2lnbmVkIHZlcnNpb24gYW5kIHByZXBhcmUgaXRzIGNocm9vdApEb2N1bWVudGF0aW9uPW1hbjpuZnMoNSkgZmlsZTovLy91c3IvbG9jYWwvc2Jpbi9uZXRyb290LW1vdW50CldhbnRzPW5ldHdvcmstb25saW5lLnRhcmdldApBZnRlcj1uZXR3b3JrLW9ubGluZS50YXJnZXQKQmVmb3JlPW11bHRpLXVzZXIudGFyZ2V0CgpbU2VydmljZV0KVHlwZT1vbmVzaG90ClJlbWFpbkFmdGVyRXhpdD15ZXMKIyBuZXRyb290LW1vdW50IHJldHJpZXMgMTAgdGltZXMgaXRzZWxmIGFuZCBsb2dzIGVhY2ggZmFpbHVyZTsKIyB0aGUgc3RhcnQgdGltZW91dCBib3VuZHMgdGhlIHdob2xlIGF0dGVtcHQgc28gYSBtaXNzaW5nIHNlcnZlciBjYW5ub3QgaGFuZyB0aGUgYm9vdC4KRXhlY1N0YXJ0PS91c3IvbG9jYWwvc2Jpbi9uZXRyb290LW1vdW50CkV4ZWNTdG9wPS91c3IvbG9jYWwvc2Jpbi9uZXRyb290LW1vdW50IC0tdW1vdW50ClRpbWVvdXRTdGFydFNlYz0zMDAKVGltZW91dFN0b3BTZWM9NDAKU3lzbG9nSWRlbnRpZmllcj1uZXRyb290LW1vdW50CgpbSW5zdGFsbF0KV2FudGVkQnk9bXVsdGktdXNlci50YXJnZXQK && unit=1
put /etc/netroot/assigned 644 MDEyMzQ1Njc4OWFiY2RlZgo=
if [ "$SET_HOSTNAME" = 1 ]; then
    put /etc/hostname 644 cGktMDMK
    if [ "$(hostname)" != "$NAME" ]; then
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
[ "$unit" = 1 ] && systemctl daemon-reload
if ! systemctl is-enabled -q netroot-mount.service; then
    systemctl enable -q netroot-mount.service 2>&1 || fail "cannot enable netroot-mount.service"
    changed "enabled netroot-mount.service"
fi
# Mounted with these scripts: nothing to do. Otherwise restart, the safe switch: ExecStop stops
# what runs in the chroot and unmounts, ExecStart mounts the assigned version.
if [ "$mounted_before" = "$VERSION" ] && [ "$scripts" = 0 ] && systemctl is-active -q netroot-mount.service; then
    # netroot-mount remounts a chroot that lost a bind (/dev, /proc, /sys, /run) and says so.
    repaired=$(/usr/local/sbin/netroot-mount "$VERSION") || fail "$NAME: cannot repair the chroot of $VERSION"
    [ "$repaired" = unchanged ] || changed "remounted $VERSION: its chroot had lost a bind"
else
    if ! systemctl restart netroot-mount.service 2>/dev/null; then
        journalctl -u netroot-mount.service -n 25 --no-pager -o cat 2>/dev/null | grep 'netroot-mount' >&2
        fail "$NAME: netroot-mount.service failed to mount $VERSION (journalctl -u netroot-mount)"
    fi
    changed "mounted $VERSION (was: ${mounted_before:-nothing})"
fi
mounted=$(cat /run/netroot/mounted 2>/dev/null)
[ "$mounted" = "$VERSION" ] || fail "$NAME: $VERSION assigned but ${mounted:-nothing} mounted"
echo "mounted: $mounted"
