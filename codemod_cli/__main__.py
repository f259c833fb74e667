from codemod_cli.app import main

main()
