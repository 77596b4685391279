"""The demo's numbers in README.md and docs/demo.md, and the overview image, are what ``sim2real-eval
demo`` gives as shipped (K = 10, its seeds), and the real study's are what ``sim2real-eval demo
--real-sample`` gives as shipped: ``benchmarks/make_readme_numbers.py`` writes them from the two demo
outputs, and this test fails when they drift (a code change that moves a number must regenerate them:
``python benchmarks/make_readme_numbers.py``).  The full demos are used, not reduced ones: the README
shows what the commands print (the real sample takes ≈ 25 s here)."""
from __future__ import annotations

from pathlib import Path

import pytest
from fixtures.benchmarks import load_benchmark

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "benchmarks" / "make_readme_numbers.py"


def load_script():
    return load_benchmark("make_readme_numbers")


def test_regions_are_found_and_replaced():
    script = load_script()
    text = ("a\n<!-- generated: one -->\nold\n<!-- end: one -->\nb\n"
            "<!-- generated: two -->\n<!-- end: two -->\nc\n")
    assert script.regions(text) == {"one": "old", "two": ""}
    new = script.replace_regions(text, {"one": "| x |\n| y |", "two": "z"})
    assert new == ("a\n<!-- generated: one -->\n| x |\n| y |\n<!-- end: one -->\nb\n"
                   "<!-- generated: two -->\nz\n<!-- end: two -->\nc\n")
    assert script.regions(new) == {"one": "| x |\n| y |", "two": "z"}
    assert script.replace_regions(new, {}) == new  # unknown regions are left as they are


def test_every_generated_region_exists():
    """README and docs/demo.md hold every region the script renders (none lost in an edit)."""
    script = load_script()
    found = {name: set(script.regions(path.read_text(encoding="utf-8")))
             for name, path in script.FILES.items()}
    assert found["README.md"] == {"readme-table-1", "readme-real-sample", "readme-degraded-gnss"}
    assert found["docs/demo.md"] == {"demo-heading", "demo-table-1", "demo-adjacent", "demo-table-2",
                                     "demo-floor", "demo-findings", "demo-run-means", "demo-real-heading",
                                     "demo-real-design", "demo-real-verdicts", "demo-real-fitted",
                                     "demo-real-sensitivity", "demo-real-run-means", "demo-degraded-gnss",
                                     "judges-synthetic", "judges-real"}  # judges-*: benchmarks/judge_table.py
    assert found["docs/calibration.md"] == {"calibration-fit-real"}
    assert script.png_numbers(script.IMAGE), "docs/img/demo_overview.png carries no numbers: regenerate it"


@pytest.fixture(scope="module")
def demo_output(tmp_path_factory):
    from sim2real_eval.cli import main

    out = tmp_path_factory.mktemp("readme_numbers") / "report"
    assert main(["demo", "--out", str(out), "--no-progress"]) == 0
    return out


@pytest.mark.slow
def test_readme_and_docs_numbers_are_what_the_demo_gives(demo_output):
    script = load_script()
    data = script.load(demo_output)
    blocks = script.render(data)
    stale = script.differences(blocks, script.image_numbers(data))
    assert not stale, (f"stale numbers in {', '.join(stale)}: the demo gives other numbers now; run "
                       "`python benchmarks/make_readme_numbers.py` and commit what it writes")
    # what the README's table says is what the demo printed
    printed = (demo_output / "demo.json").read_text()
    assert '"k": 10' in printed and blocks["readme-table-1"] in (REPO / "README.md").read_text()


@pytest.mark.slow
def test_readme_and_docs_real_study_numbers_are_what_the_real_sample_gives(real_sample_demo):
    """The real study's tables and sentences (README "On a real car", docs/demo.md "The real sample")."""
    script = load_script()
    blocks = script.render_real(script.load_real(real_sample_demo))
    assert set(blocks) == {"readme-real-sample", "demo-real-heading", "demo-real-design",
                           "demo-real-verdicts", "demo-real-fitted", "demo-real-sensitivity",
                           "demo-real-run-means", "calibration-fit-real"}
    stale = script.differences(blocks, None)
    assert not stale, (f"stale numbers in {', '.join(stale)}: `sim2real-eval demo --real-sample` gives other "
                       "numbers now; run `python benchmarks/make_readme_numbers.py --only real` and commit "
                       "what it writes")
