from mdrecall.cli.app import main

main()
