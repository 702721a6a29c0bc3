"""True netboot: the TFTP tree, the kernel command line and dnsmasq's proxy-DHCP config."""
