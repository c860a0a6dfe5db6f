"""What a fold keeps: the state, names and files a summary carries past the span it replaces (core, pure).

The working-state ledger (``_ledger``), what the agent read (``_reading``) and the names in use (``_names``) are
sections of a summary, fitted into its budget by ``_summary_text``. The working set (``_working_set``) holds the
files the run still works with: following edits (``_edits``) and shell commands (``_shell``), an indexed outline
of a file too large to keep whole (``_outline``), what the request still asks for first (``_relevance``), and a
recall line for what it leaves out (``_recall``). Holding the working set during a run is the integration
layer's (``agno_compression._held``).
"""
