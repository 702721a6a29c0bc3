"""A stand-in for a Raspberry Pi 3B's boot ROM on the network: its DHCP DISCOVER and TFTP reads.

The DISCOVER is shaped like the one the 3B ROM sends (tcpdumps in raspberrypi/firmware #871 and
#1605): vendor class "PXEClient:Arch:00000:UNDI:002001", client architecture 0 (option 93),
UNDI 1.2.1 (94), a GUID that is the serial four times (97), and a parameter request list
asking for 43, 60, 66, 67, 128-135, 1 and 3. TFTP is RFC 1350 (octet mode, 512-byte blocks).
Stdlib only; run inside the test's network namespace as
`python3 pxe_rom.py discover IFACE MAC SERIAL WAIT` or `... tftp SERVER FILE...` (JSON out).
"""

from __future__ import annotations

import base64
import json
import os
import socket
import struct
import sys

MAGIC = b"\x63\x82\x53\x63"
VENDOR_CLASS = b"PXEClient:Arch:00000:UNDI:002001"
REQUESTED = bytes([43, 60, 66, 67, 128, 129, 130, 131, 132, 133, 134, 135, 1, 3])
SO_BINDTODEVICE = getattr(socket, "SO_BINDTODEVICE", 25)


def discover_packet(mac: str, xid: int, serial: str) -> bytes:
    """A BOOTP/DHCP DISCOVER as the 3B ROM sends it (no broadcast flag, ciaddr 0)."""
    chaddr = bytes.fromhex(mac.replace(":", ""))
    head = struct.pack("!BBBBIHH4s4s4s4s", 1, 1, 6, 0, xid, 0, 0, *(b"\0" * 4,) * 4)
    guid = b"\x00" + bytes.fromhex(serial) * 4
    options = b"".join(
        bytes([code, len(value)]) + value
        for code, value in (
            (53, b"\x01"),  # DISCOVER
            (55, REQUESTED),
            (93, b"\x00\x00"),  # client architecture: x86 BIOS, what the ROM claims
            (94, b"\x01\x02\x01"),  # UNDI 1.2.1
            (97, guid),
            (60, VENDOR_CLASS),
        )
    )
    return head + chaddr.ljust(16, b"\0") + b"\0" * 192 + MAGIC + options + b"\xff"


def parse_options(data: bytes) -> dict[int, bytes]:
    """code -> value of a DHCP options field (pad 0 skipped, end 255 stops)."""
    out: dict[int, bytes] = {}
    pos = 0
    while pos < len(data):
        code = data[pos]
        if code == 255:
            break
        if code == 0:
            pos += 1
            continue
        length = data[pos + 1]
        out[code] = data[pos + 2 : pos + 2 + length]
        pos += 2 + length
    return out


def parse_reply(data: bytes) -> dict[str, object]:
    """The fields of a BOOTP reply the test checks; options as hex."""
    op, _, _, _, xid = struct.unpack_from("!BBBBI", data)
    siaddr = socket.inet_ntoa(data[20:24])
    chaddr = data[28:34].hex(":")
    if data[236:240] != MAGIC:
        raise ValueError("no DHCP magic cookie")
    options = parse_options(data[240:])
    return {"op": op, "xid": xid, "siaddr": siaddr, "chaddr": chaddr,
            "options": {str(k): v.hex() for k, v in options.items()}}  # fmt: skip


def discover(iface: str, mac: str, serial: str, wait: float) -> dict[str, object] | None:
    """Broadcast one DISCOVER on `iface`; the first reply for our xid, or None after `wait` s."""
    xid = int.from_bytes(os.urandom(4), "big")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
        sock.setsockopt(socket.SOL_SOCKET, SO_BINDTODEVICE, iface.encode())
        sock.bind(("0.0.0.0", 68))
        sock.settimeout(wait)
        sock.sendto(discover_packet(mac, xid, serial), ("255.255.255.255", 67))
        while True:
            try:
                data, _ = sock.recvfrom(2048)
            except TimeoutError:
                return None
            reply = parse_reply(data)
            if reply["op"] == 2 and reply["xid"] == xid:
                return reply


def tftp_get(server: str, name: str, wait: float = 5.0) -> bytes:
    """Read `name` over TFTP (RFC 1350, octet); OSError with the server's message on error."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(wait)
        sock.sendto(b"\x00\x01" + name.encode() + b"\0octet\0", (server, 69))
        data, expected, peer = bytearray(), 1, None
        while True:
            packet, addr = sock.recvfrom(4 + 512)
            if peer is None:
                peer = addr  # the server answers from a new port (its transfer ID)
            if addr != peer:
                continue
            opcode, block = struct.unpack_from("!HH", packet)
            if opcode == 5:
                raise OSError(f"TFTP error {block} for {name}: {packet[4:-1].decode()}")
            if opcode != 3:
                raise OSError(f"unexpected TFTP opcode {opcode} for {name}")
            if block == expected & 0xFFFF:
                data += packet[4:]
                expected += 1
            sock.sendto(struct.pack("!HH", 4, block), peer)
            if len(packet) - 4 < 512 and block == (expected - 1) & 0xFFFF:
                return bytes(data)


def main(argv: list[str]) -> int:
    if argv[0] == "discover":
        iface, mac, serial, wait = argv[1], argv[2], argv[3], float(argv[4])
        print(json.dumps(discover(iface, mac, serial, wait)))
        return 0
    if argv[0] == "tftp":
        server, names = argv[1], argv[2:]
        files = {n: base64.b64encode(tftp_get(server, n)).decode() for n in names}
        print(json.dumps(files))
        return 0
    print(f"usage: {sys.argv[0]} discover IFACE MAC SERIAL WAIT | tftp SERVER FILE...")
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
