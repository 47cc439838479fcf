"""The command line as people type it: git's `-C DIR` before the command, and the kept
demo where the README's blocked push really happens."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import git

from proximity.main import main


def test_c_before_the_command_is_taken_as_git_takes_it(tmp_path, capsys):
    root = tmp_path / "demo"
    assert main(["demo", "--dir", str(root), "--json"]) == 0
    capsys.readouterr()
    outs = []
    for argv in (["status", "--json", "-C", str(root / "carol")],
                 ["-C", str(root / "carol"), "status", "--json"],
                 ["-C", str(root), "-C", "carol", "status", "--json"],  # they compose
                 ["-C", str(root), "status", "--json", "-C", "carol"]):  # and the command's
        assert main(argv) == 0, argv
        got = json.loads(capsys.readouterr().out)
        outs.append(({a["id"] for a in got["agents"]},
                     sorted((p["a"], p["b"], p["advisory"]) for p in got["pairs"])))
    assert all(o == outs[0] for o in outs) and "carol" in outs[0][0]
    assert main(["-C", str(root / "carol"), "inbox", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["agent"] == "carol"
    assert main(["-C", str(tmp_path / "nowhere"), "demo"]) == 2
    assert "nowhere" in capsys.readouterr().err
    # `check` and `hook` after a global -C: argparse reads them, no fast path asked
    # the service, and they answer as their fast paths do
    for argv in (["check", "--json", "-C", str(root / "carol"), "app/views.py"],
                 ["-C", str(root / "carol"), "check", "--json", "app/views.py"]):
        main(argv)
        outs.append(json.loads(capsys.readouterr().out))
    assert outs[-1] == outs[-2] and outs[-1]["decision"] in ("allow", "ask", "deny"), outs
    (root / "carol" / "app" / "views.py").write_text("# carol's edit\n")
    assert main(["-C", str(root / "carol"), "hook", "snapshot"]) == 0
    capsys.readouterr()
    assert main(["ledger", "--json", "-n", "1", "-C", str(root / "carol")]) == 0
    last = json.loads(capsys.readouterr().out)["events"][-1]
    assert last["stream"] == "carol" and "app/views.py" in last["files"], last


def test_the_kept_demo_blocks_bobs_push_as_the_readme_shows(tmp_path):
    root = tmp_path / "demo"
    out = subprocess.run([sys.executable, "-m", "proximity", "demo", "--keep", "--dir",
                          str(root)], capture_output=True, text=True, check=True)
    assert "Its hooks are installed" in out.stdout
    bob = root / "bob"
    git(bob, "commit", "-qam", "trim names")
    pushed = git(bob, "push", "origin", "feature/bob", check=False)
    assert pushed.returncode != 0
    assert "push blocked: this worktree must yield to 'alice'" in pushed.stderr
    assert git(root / "shop", "ls-remote", "origin").stdout == ""  # nothing reached it
