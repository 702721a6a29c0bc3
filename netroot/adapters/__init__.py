"""Side-effecting adapters: the Docker engine, SSH, ansible-runner. One narrow module each;
they take and return values and import nothing of netroot's rooms."""
