"""The core shared by every surface: the memory record and transactional document writes."""
