"""Storage: pynamodb models (``tables``), S3 objects (``blobs``), transactional retry (``txn``)."""
