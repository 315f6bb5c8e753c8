import pytest

from a2c.common.errors import A2CError
from a2c.common.registry import Registry, UnknownNameError


def test_registry_suggests_close_names():
    reg: Registry[int] = Registry("judge")
    reg.register("entail")(1)
    reg.register("contra")(2)
    assert reg.get("entail") == 1
    assert reg.names() == ["contra", "entail"]
    with pytest.raises(UnknownNameError, match=r"unknown judge 'ential'\. Did you mean 'entail'\?") as info:
        reg.get("ential")
    assert isinstance(info.value, A2CError)


def test_registry_refuses_duplicates():
    reg: Registry[int] = Registry("backend")
    reg.register("x")(1)
    with pytest.raises(ValueError, match="registered twice"):
        reg.register("x")(2)
