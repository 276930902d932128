"""A hostile little filesystem for workspace tests: a root full of traps and sentinels outside."""

from __future__ import annotations

import hashlib
import os
import secrets
from dataclasses import dataclass
from pathlib import Path


@dataclass
class World:
    base: Path
    root: Path
    outside: Path
    sentinel: str

    def snapshot(self) -> dict[str, str]:
        """Every path under base but outside the root, with a hash of its content."""
        out: dict[str, str] = {}
        for dirpath, dirnames, filenames in os.walk(self.base, followlinks=False):
            here = Path(dirpath)
            if here == self.root or self.root in here.parents:
                dirnames[:] = []
                continue
            for name in [*dirnames, *filenames]:
                p = here / name
                if p == self.root:
                    continue
                if p.is_symlink():
                    out[str(p)] = "link:" + os.readlink(p)
                elif p.is_file():
                    out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
                else:
                    out[str(p)] = "dir"
        return out


def build_world(base: Path) -> World:
    sentinel = "SENTINEL-" + secrets.token_hex(8)
    outside = base / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(f"{sentinel} secret\n")
    (outside / "nested").mkdir()
    (outside / "nested" / "deep.txt").write_text(f"{sentinel} deep\n")
    root = base / "ws"
    root.mkdir()
    (root / "a.txt").write_text("alpha inside\nsecond line\n")
    (root / "sub").mkdir()
    (root / "sub" / "b.txt").write_text("bravo inside\n")
    (root / "café.txt").write_text("nfc name\n")
    os.symlink("../outside", root / "link_out")
    os.symlink("../outside/secret.txt", root / "link_file")
    os.symlink(str(outside / "secret.txt"), root / "abs_link")
    os.symlink("../../outside", root / "sub" / "deep")
    os.symlink(f"/proc/self/root{outside}/secret.txt", root / "proc_link")
    os.symlink("a.txt", root / "link_in")
    os.symlink("loop2", root / "loop1")
    os.symlink("loop1", root / "loop2")
    os.symlink("/", root / "slash")
    os.symlink("sub/../../outside", root / "tricky")
    os.link(outside / "secret.txt", root / "hard.txt")
    os.symlink(root, base / "rootlink")
    return World(base=base, root=root, outside=outside, sentinel=sentinel)


def hostile_paths(world: World) -> list[str]:
    """Paths that try to leave the root, or are malformed: each must be refused under
    DENY_OUTSIDE (or be a harmless literal name inside the root)."""
    out = str(world.outside)
    secret = f"{out}/secret.txt"
    return [
        "../outside/secret.txt",
        "../../../../../../etc/passwd",
        "..",
        "../",
        "../ws/../outside/secret.txt",
        "./../outside/secret.txt",
        "sub/../../outside/secret.txt",
        "sub/./../../outside/secret.txt",
        "sub//..//..//outside/secret.txt",
        "a.txt/../../outside/secret.txt",
        "nonexistent/../../outside/secret.txt",
        "nonexistent/../../../outside",
        secret,
        out,
        f"{out}/nested/deep.txt",
        f"{out}/../outside/secret.txt",
        f"{world.root}/../outside/secret.txt",
        f"{world.root}/sub/../../outside/secret.txt",
        f"{world.base}/rootlink/../outside/secret.txt",
        f"/{secret}",
        f"//{secret.lstrip('/')}",
        f"/./{secret.lstrip('/')}",
        f"/proc/self/root{secret}",
        f"/proc/self/root{out}/nested/deep.txt",
        "/proc/self/root",
        "/proc/self/cwd/../../../../etc/passwd",
        "/proc/self/environ",
        "/proc/1/root/etc/passwd",
        "/dev/../etc/passwd",
        "/etc/passwd",
        "/etc/shadow",
        "/",
        "/tmp",
        "~",
        "~/",
        "~/.bashrc",
        "~root/.profile",
        "~nobody",
        "link_out",
        "link_out/",
        "link_out/.",
        "link_out/secret.txt",
        "link_out/nested/deep.txt",
        "link_out/../outside/secret.txt",
        "link_out/nested/../secret.txt",
        "link_file",
        "abs_link",
        "sub/deep/secret.txt",
        "sub/deep",
        "sub/deep/nested",
        "proc_link",
        "slash/etc/passwd",
        f"slash{secret}",
        "tricky/secret.txt",
        "hard.txt",
        "loop1",
        "loop1/x",
        "a\x00.txt",
        "../outside/secret.txt\x00.txt",
        "\x00",
        "x" * 5000,
        "a/" + "b" * 300,
        "b" * 256,
        "/" + "/".join(["x"] * 3000),
        "\ud800",
        "．．/outside/secret.txt",  # fullwidth dots: a literal name, never '..'
        "\u2025/outside/secret.txt",  # two-dot leader
        "..\\outside\\secret.txt",  # backslashes are name characters on POSIX
        "%2e%2e/outside/secret.txt",
        "..%2fouside%2fsecret.txt",
        "....//outside/secret.txt",
        "..\u200b/outside/secret.txt",  # zero-width space
        "\u202e../outside/secret.txt",  # right-to-left override
        "OUTSIDE/secret.txt",
        "Link_Out/secret.txt",
        "LINK_OUT/secret.txt",
        "link_out\u0338/secret.txt",
        "cafe\u0301.txt/../../outside/secret.txt",  # NFD spelling of an existing name
        "café.txt/../../outside/secret.txt",
        "sub/deep/../secret.txt",
        "sub/deep/nested/../../outside/secret.txt",
        "link_in/../../outside/secret.txt",
        "./link_out/secret.txt",
        "sub/../link_out/secret.txt",
        "sub/../sub/../link_out/secret.txt",
        f"{world.root}/link_out/secret.txt",
        f"{world.base}/rootlink/link_out/secret.txt",
        f"{world.root}/abs_link",
        f"{world.root}/hard.txt",
        f"{world.root}/proc_link",
        f"{world.base}/rootlink/../outside",
        f"/proc/self/root{world.root}/link_out/secret.txt",
        f"/proc/self/root{world.root}/../outside/secret.txt",
        f"/proc/self/fd/../../self/root{secret}",
        "/proc/self/cwd",
        "/proc/thread-self/root/etc/passwd",
        "/sys/../etc/passwd",
        "/var/../etc/passwd",
        "~/../../etc/passwd",
        "~/../outside",
        "${HOME}/.bashrc",
        "$HOME/.bashrc",
        "`cat /etc/passwd`",
        "$(cat ../outside/secret.txt)",
        "-rf",
        "*",
        "../*",
        "**/../../outside",
        "sub/*/../../outside/secret.txt",
    ]
