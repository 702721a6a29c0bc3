#!/bin/bash
# The cold demo as bench.bench_demo --runs cold --with-images runs it (its env, an empty cache,
# a new lab home, the lab's three Docker images removed), but with the demo's own output kept
# in a file, so an interrupted run still says how far it got; stopped at END with SIGINT.
set -u
END=${END:?}  # epoch seconds: SIGINT to the demo then
D=${D:-/var/tmp/scratch-build/demo}; CLONE=$D/netroot; S=$D/scratch  # CLONE: a fresh clone with its venv
rm -rf $S; mkdir -p $S/cache
cd $CLONE
export BOARDS=3 NO_COLOR=1 COLUMNS=120
env -u NETROOT_HOME -u NETROOT_CACHE .venv/bin/netroot lab down > $D/labdown0.log 2>&1
for name in server raspbian raspbian-torch; do
  ref=netroot-lab/$name:bookworm
  docker image inspect -f '{{.Id}}' $ref > $D/old-$name.id
  docker tag $ref netroot-backup-build/$name:keep
  docker image rm $ref
done
export NETROOT_HOME=$S/home-cold NETROOT_CACHE=$S/cache
{ date -u; uptime; ls -A $S/cache | wc -l; } > $D/demo.start
timeout -s INT $((END - $(date +%s))) bash .ci/demo > $D/demo.log 2>&1
echo "rc=$?" >> $D/demo.log
{ date -u; uptime; } > $D/demo.end
.venv/bin/netroot lab down > $D/labdown1.log 2>&1
echo "lab down rc=$?" >> $D/labdown1.log
