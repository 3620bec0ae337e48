from mdrecall.cli.fast import main

main()
