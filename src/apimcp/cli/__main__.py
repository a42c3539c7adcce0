from apimcp.cli.main import main

main()
