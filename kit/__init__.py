"""kit: the audit kit, the words an audit plan calls (docs/KIT.md).

``kit.audit_words.audit_words(run, corpus=...)`` is the host provider; ``kit.verify`` runs a
finding's failing call in a locked-down child process; ``kit.findings`` normalises, dedupes
and votes; ``kit.paths``, ``kit.source`` and ``kit.shards`` read the corpus (never hidden/).
"""
