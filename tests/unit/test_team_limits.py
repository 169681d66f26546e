"""Team memory's limits as settings: an invalid one is a configuration error naming its variable."""

from __future__ import annotations

import pytest

P = "KEYSTONE_CONTEXT_MEMORY_"


def test_invalid_limit_is_config_error_naming_the_variable(monkeypatch):
    from chalicelib.errors import ConfigError
    from chalicelib.team.limits import get_limits
    for value in ("zero", "0", "-5"):
        monkeypatch.setenv(P + "COMPACT_AFTER", value)
        with pytest.raises(ConfigError, match=P + "COMPACT_AFTER"):
            get_limits()
    monkeypatch.delenv(P + "COMPACT_AFTER")
    assert get_limits().compact_after == 256 and get_limits().max_units == 262144
