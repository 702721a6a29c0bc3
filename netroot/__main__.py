from netroot.cli.main import main

main()
