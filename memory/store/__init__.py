"""The store of record and its write path: records, reads, writes, thread owners, locks."""
