"""Netboot on the control host: each board's kernel command line, what each board boots, and
dnsmasq's proxy-DHCP + TFTP config. The TFTP tree itself is built on the server by
netroot/remote (tree, switch, uboot)."""
