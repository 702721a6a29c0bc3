"""Side-effecting adapters: docker, ssh, ansible, nfs, lab. One narrow module each."""
