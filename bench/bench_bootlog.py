"""What finding diskless boards' boot stages in dnsmasq's log costs (not a test): milliseconds
by log size, so that the claim "the cost follows the lines since the boards' last steps, not
the log's size" (docs/fleet.md) has figures.

    .venv/bin/python -m bench.bench_bootlog [--waves 10,300] [--runs 5]

For each WAVES, a scratch log of that many boot waves of 100 boards, in dnsmasq's own line
shapes (each board's DHCPACK, 20 log-dhcp option lines, a TFTP `sent`), read by
netroot.remote.bootlog.answer as the server runs it: once asking for the 100 boards (all in
the last wave: the read stops there), once for one board the log never names (the read goes
to its bound, MAX_BYTES). Prints JSON: log MiB and the median milliseconds of RUNS.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from netroot.remote import bootlog

BOARDS = [
    {"name": f"nb-{i:03d}", "mac": f"52:54:00:00:01:{i:02x}", "address": f"10.77.1.{i}"}
    for i in range(100)
]
STRANGER = [{"name": "x", "mac": "52:54:00:ff:ff:ff", "address": "10.77.9.9"}]


def write_log(path: Path, waves: int) -> None:
    with path.open("w") as fh:
        for wave in range(waves):
            for i, b in enumerate(BOARDS):
                stamp = f"Dec  7 17:{wave % 60:02d}:{i % 60:02d}"
                fh.write(
                    f"{stamp} dnsmasq-dhcp[7]: {wave} DHCPACK(eth0) {b['address']} {b['mac']} \n"
                )
                option = "sent size:  4 option: 54 server-identifier  10.77.0.2"
                fh.write(f"{stamp} dnsmasq-dhcp[7]: {wave} {option}\n" * 20)
                fh.write(
                    f"{stamp} dnsmasq-tftp[7]: sent /srv/tftp/{i:08x}/vmlinuz to {b['address']}\n"
                )


def _ms(log: Path, boards: list[dict[str, str]], runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        bootlog.answer({"log": str(log), "tftp_root": "/srv/tftp", "boards": boards}, time.time())
        times.append(1000 * (time.perf_counter() - t))
    return round(statistics.median(times), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--waves", default="10,300")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    out = []
    with tempfile.TemporaryDirectory() as scratch:
        for waves in (int(w) for w in args.waves.split(",")):
            log = Path(scratch) / f"dnsmasq-{waves}.log"
            write_log(log, waves)
            out.append({"waves": waves, "log_mib": round(log.stat().st_size / 2**20, 1),
                        "100_boards_ms": _ms(log, BOARDS, args.runs),
                        "absent_board_ms": _ms(log, STRANGER, args.runs)})  # fmt: skip
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
