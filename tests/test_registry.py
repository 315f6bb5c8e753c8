import sys

import pytest

from a2c.common.errors import A2CError
from a2c.common.registry import Registry, UnknownNameError, lazy_attributes, resolve


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


def test_resolve_follows_a_dotted_attribute_and_checks_the_base():
    from a2c.llm.config import TransformersConfig
    from a2c.llm.transformers_backend import TransformersBackend

    assert resolve("a2c.llm.transformers_backend:TransformersBackend.from_config") \
        == TransformersBackend.from_config
    assert resolve(TransformersConfig.backend_at) == TransformersBackend.from_config
    assert resolve("a2c.common.registry:Registry", base=object) is Registry
    with pytest.raises(TypeError, match=r"judge 'x': a2c.common.registry:resolve is not a Registry"):
        resolve("a2c.common.registry:resolve", base=Registry, what="judge 'x'")
    with pytest.raises(ValueError, match=r"must be 'module:attr', got 'a2c\.common\.registry'"):
        resolve("a2c.common.registry")


def test_a_lazy_entry_of_the_wrong_kind_is_refused_on_lookup():
    reg: Registry[type] = Registry("task", base=Exception)
    reg.register_lazy("odd", "a2c.common.registry:Registry")
    assert "odd" in reg  # known by name before anything is imported
    with pytest.raises(TypeError, match=r"task 'odd': a2c\.common\.registry:Registry is not a Exception"):
        reg.get("odd")


def test_lazy_attributes_imports_on_first_use_and_warns_only_for_deprecated_names(monkeypatch):
    import types

    package = types.ModuleType("a2c_lazy_probe")
    monkeypatch.setitem(sys.modules, package.__name__, package)
    hook = lazy_attributes(package.__name__, {"a2c.common.registry": ("Registry",)},
                           moved_to="a2c.common.errors",
                           deprecated=lambda name: f"{name} moved" if name == "A2CError" else None)
    package.__getattr__ = hook  # type: ignore[attr-defined]
    assert package.Registry is Registry and "Registry" in vars(package)  # stored: the hook runs once
    with pytest.warns(DeprecationWarning, match="^A2CError moved$"):
        assert package.A2CError is A2CError
    assert "A2CError" not in vars(package)  # a deprecated name warns on every use
    with pytest.raises(AttributeError, match="has no attribute '__path__'"):
        package.__getattr__("__path__")
    with pytest.raises(AttributeError):
        package.nothing_here  # noqa: B018  (not in homes; moved_to has no such name)


def _installed(monkeypatch, *plugins):
    """Entry points as the installed metadata would give them (the real install: tests/test_plugins.py)."""
    from a2c.common import registry

    monkeypatch.setattr(registry, "plugin_entry_points",
                        lambda group: [registry.Plugin(n, v, group, d) for n, v, d in plugins])


def test_plugins_are_names_read_once_and_loaded_on_lookup(monkeypatch):
    from a2c.common.registry import PluginError, PluginWarning

    _installed(monkeypatch, ("outside", "a2c.common.errors:A2CError", "dist-a"),
               ("inside", "a2c.common.errors:RenamedKeyWarning", "dist-b"),
               ("missing", "a2c_no_such_module:Thing", "dist-c"))
    reg: Registry[type] = Registry("judge", base=Exception, group="a2c.judges")
    reg.register("inside")(KeyError)
    with pytest.warns(PluginWarning, match=r"judge 'inside' is built in: the entry point `inside = "
                                           r"a2c\.common\.errors:RenamedKeyWarning` of 'dist-b'"):
        assert reg.names() == ["inside", "missing", "outside"]
    assert reg.get("inside") is KeyError and reg.plugin_of("inside") is None  # the built-in wins
    assert reg.get("outside") is A2CError and reg.plugin_of("outside").distribution == "dist-a"
    with pytest.raises(PluginError, match=r"^judge 'missing' comes from the entry point `missing = "
                                          r"a2c_no_such_module:Thing` of 'dist-c' \(group a2c\.judges\), "
                                          r"which cannot be loaded: ModuleNotFoundError: No module named"):
        reg.get("missing")
    with pytest.raises(UnknownNameError, match=r"Known: inside, missing, outside\. Plug-ins add names "
                                               r"through the entry-point group a2c\.judges\.$"):
        reg.get("nothing")
    assert reg.names(plugins=False) == ["inside"] and [n for n, _ in reg.items(plugins=False)] == ["inside"]


def test_a_plugin_of_the_wrong_kind_is_refused_on_lookup(monkeypatch):
    from a2c.common.registry import PluginError

    _installed(monkeypatch, ("odd", "a2c.common.registry:resolve", "dist-a"))
    reg: Registry[type] = Registry("task", base=Exception, group="a2c.tasks")
    with pytest.raises(PluginError, match=r"cannot be loaded: TypeError: task 'odd': "
                                          r"a2c\.common\.registry:resolve is not a Exception$"):
        reg.get("odd")
