#!/bin/bash
# The shared lab's three images back as they were (main's labels); the demo's own, by id, gone.
D=${D:-/var/tmp/scratch-build/demo}
for name in server raspbian raspbian-torch; do
  ref=netroot-lab/$name:bookworm
  new=$(docker image inspect -f '{{.Id}}' $ref 2>/dev/null)
  docker tag netroot-backup-build/$name:keep $ref
  docker image rm netroot-backup-build/$name:keep >/dev/null
  if [ -n "$new" ] && [ "$new" != "$(cat $D/old-$name.id)" ]; then docker image rm "$new"; fi
  echo "$ref $(docker image inspect -f '{{.Id}} {{index .Config.Labels "netroot.recipe"}}' $ref) was $(cat $D/old-$name.id)"
done
