"""The release's front matter agrees with the package: the README stays a front page, the changelog has a
section for the version pyproject.toml and `a2c.__version__` both name, every deprecated name a2c still
accepts has its changelog line with the release that removes it, and the contributing guide states the
commit rule. The site shows both files (`docs/changelog.md`, `docs/contributing.md` include them).

Each check is a function of the files' text, so the tests below also show it failing on a text that
breaks it.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

import a2c

ROOT = Path(__file__).resolve().parents[1]
README_LIMIT = 8192  # bytes: a front page; the detail lives in docs/
HEADING = re.compile(r"^## \[(?P<version>[^\]]+)\](?: - (?P<date>\d{4}-\d{2}-\d{2}))?\s*$", re.MULTILINE)
# what CONTRIBUTING.md must say about a commit: the subject's length, its form and its mood
COMMIT_RULE = ("72 characters", "`area: what changed`", "imperative")


def read(name: str) -> str:
    return (ROOT / name).read_text(encoding="utf-8")


def pyproject_version() -> str:
    return str(tomllib.loads(read("pyproject.toml"))["project"]["version"])


def sections(changelog: str) -> dict[str, str]:
    """Each `## [VERSION] - DATE` (or `## [Unreleased]`) section's text by its version, in file order;
    a released version's key carries its date: `0.2.0 - 2026-12-02`."""
    found = list(HEADING.finditer(changelog))
    ends = [m.start() for m in found[1:]] + [len(changelog)]
    return {(m["version"] if m["date"] is None else f"{m['version']} - {m['date']}"): changelog[m.end():end]
            for m, end in zip(found, ends, strict=True)}


def release_section(changelog: str, version: str) -> str | None:
    """The text of the dated section of `version`, None when there is none."""
    return next((text for key, text in sections(changelog).items() if key.split(" - ")[0] == version
                 and " - " in key), None)


def subsection(section: str, heading: str) -> str:
    """A `### heading` of a release's section, up to the next `###` (empty when it has none)."""
    match = re.search(rf"^### {re.escape(heading)}\s*$(?P<body>.*?)(?=^### |\Z)", section,
                      re.MULTILINE | re.DOTALL)
    return match["body"] if match else ""


def next_minor(version: str) -> str:
    major, minor = version.split(".")[:2]
    return f"{major}.{int(minor) + 1}.0"


def deprecated_names() -> list[str]:
    """Every old name a2c still accepts, as the changelog must spell it: the renamed config sections
    (`a2c:`), the stages' former markers (`stages/a2c.json`), the moved modules kept as aliases
    (`a2c.pipeline`) and the names `a2c.data` still resolves with a warning."""
    import a2c.data
    from a2c.qa.config import RENAMED_SECTIONS
    from a2c.qa.stages import STAGES

    names = [f"`{old}:`" for old, _ in RENAMED_SECTIONS]
    names += [f"`stages/{former}.json`" for stage in STAGES for former in stage.former_names]
    for path in sorted((ROOT / "a2c").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if "lazy_attributes(" in text and "deprecated=" in text and path.parent.name != "common":
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
            names.append(f"`{module}`")
    names += [f"`{name}`" for name in sorted(a2c.data._MOVED)]
    return names


def missing_from(text: str, needles: list[str] | tuple[str, ...]) -> list[str]:
    return [needle for needle in needles if needle not in text]


def test_the_readme_is_a_front_page_of_at_most_8_kb():
    assert len(read("README.md").encode("utf-8")) <= README_LIMIT
    assert len(("x" * (README_LIMIT + 1)).encode("utf-8")) > README_LIMIT  # the bound is in bytes
    assert len(("é" * (README_LIMIT // 2 + 1)).encode("utf-8")) > README_LIMIT


def test_pyproject_and_the_package_name_the_same_version():
    assert re.fullmatch(r"\d+\.\d+\.\d+", pyproject_version())
    assert a2c.__version__ == pyproject_version()


def test_the_changelog_has_a_dated_section_for_the_version_after_unreleased():
    changelog = read("CHANGELOG.md")
    assert next(iter(sections(changelog))) == "Unreleased"
    assert release_section(changelog, pyproject_version()) is not None
    assert release_section(changelog, "9.9.9") is None
    undated = changelog.replace(f"## [{pyproject_version()}] - ", f"## [{pyproject_version()}] ", 1)
    assert release_section(undated, pyproject_version()) is None  # a heading without its date does not count


def test_the_changelog_states_the_deprecation_policy():
    header = read("CHANGELOG.md").split("\n## ", 1)[0]
    assert "Deprecation policy" in header and "one minor release" in header


def test_every_deprecated_name_has_a_changelog_line_saying_when_it_goes():
    """Each name a2c accepts under an old name is under *Deprecated* of the release that replaced it (the
    present one), which says the next minor release removes it."""
    names = deprecated_names()
    assert {"`a2c:`", "`stages/a2c.json`", "`a2c.pipeline`", "`a2c.registry`", "`a2c.data`"} <= set(names)
    section = release_section(read("CHANGELOG.md"), pyproject_version())
    assert section is not None
    deprecated = subsection(section, "Deprecated")
    assert missing_from(deprecated, names) == []
    assert f"removed in {next_minor(pyproject_version())}" in deprecated
    assert missing_from(deprecated.replace("`a2c.registry`", "it"), names) == ["`a2c.registry`"]
    assert subsection(section.replace("### Deprecated", "### Kept"), "Deprecated") == ""


def test_contributing_names_the_commit_rule_and_the_deprecation_policy():
    contributing = read("CONTRIBUTING.md")
    assert missing_from(contributing, COMMIT_RULE) == []
    assert missing_from(contributing.replace("72", "80"), COMMIT_RULE) == ["72 characters"]
    assert "make setup" in contributing and "make test" in contributing
    assert "one minor release" in contributing


@pytest.mark.parametrize(("page", "included"), [("docs/changelog.md", '--8<-- "CHANGELOG.md"'),
                                                ("docs/contributing.md", '--8<-- "CONTRIBUTING.md:guide"')])
def test_the_site_includes_the_changelog_and_the_contributing_guide(page, included):
    assert included in read(page)
    nav = read("mkdocs.yml").split("\nnav:", 1)[1]
    assert f": {Path(page).name}" in nav
    assert "pymdownx.snippets" in read("mkdocs.yml")  # what the include line needs
    assert "[start:guide]" in read("CONTRIBUTING.md") and "[end:guide]" in read("CONTRIBUTING.md")


@pytest.mark.parametrize("name", ["CHANGELOG.md", "CONTRIBUTING.md"])
def test_the_front_matter_names_no_path_outside_the_repository(name):
    assert "../" not in read(name)
