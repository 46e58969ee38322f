from prose_tui.headless.cli import main

raise SystemExit(main())
