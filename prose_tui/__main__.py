from prose_tui.cli import main

raise SystemExit(main())
