"""Turn a checked path into an open parent folder fd plus a name, and the fd-relative
operations the file tools need; inside the root nothing ever follows a symlink unchecked."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from raf.tools.scope.identity import IdentityGuard
from raf.tools.scope.walk import WalkEscape
from raf.tools.workspace import (
    Access,
    OutsideScopeError,
    RuleAction,
    ScopePolicy,
    WorkspaceScope,
    outside_path,
)

_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC

WRITE_MARK = "user.raf.idempotency"
"""Extended attribute in which a file write records the idempotency key that made it."""


@dataclass(kw_only=True, slots=True)
class Location:
    """A path that passed the scope check: its parent folder fd and final name."""

    scope: WorkspaceScope
    shown: str
    """The path as the model wrote it, for messages."""
    parent_fd: int
    name: str | None
    inside: bool
    path: Path
    stat: os.stat_result | None
    shared_ok: bool
    """Reading a hard-linked file is allowed (policy, rule or approval)."""
    owned: list[int] = field(default_factory=list)
    approved: bool = False
    """A human approved this call (approve rules then let it through)."""

    def close(self) -> None:
        for fd in self.owned:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.owned.clear()

    @property
    def exists(self) -> bool:
        return self.stat is not None

    @property
    def is_dir(self) -> bool:
        return self.stat is not None and stat.S_ISDIR(self.stat.st_mode)

    def _require_parent(self) -> None:
        if self.parent_fd < 0:
            raise FileNotFoundError(2, f"{self.shown!r}: a parent folder does not exist")

    def open_dir(self) -> int:
        """An fd of this folder (caller closes)."""
        self._require_parent()
        if self.name is None:
            return os.dup(self.parent_fd)
        fd = os.open(self.name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=self.parent_fd)
        self._verify(fd)
        return fd

    def open_read(self) -> int:
        """An fd of this regular file for reading (caller closes)."""
        self._require_parent()
        if self.name is None:
            raise IsADirectoryError(21, f"{self.shown!r} is a folder")
        fd = os.open(self.name, _READ_FLAGS, dir_fd=self.parent_fd)
        try:
            st = os.fstat(fd)
            if stat.S_ISDIR(st.st_mode):
                raise IsADirectoryError(21, f"{self.shown!r} is a folder")
            if not stat.S_ISREG(st.st_mode):
                raise OSError(22, f"{self.shown!r} is not a regular file")
            if self.inside and st.st_nlink > 1 and not self.shared_ok:
                raise OutsideScopeError(
                    f"{self.shown!r} has {st.st_nlink} hard links; raf cannot prove the other "
                    "names are inside the workspace"
                )
            if self.inside:
                relative = self.path.relative_to(self.scope.real_root).as_posix()
                why = IdentityGuard(self.scope, approved=self.approved).refusal(relative, st)
                if why is not None:
                    raise OutsideScopeError(why)
            self._verify(fd)
            os.set_blocking(fd, True)
            return fd
        except BaseException:
            os.close(fd)
            raise

    def _verify(self, fd: int) -> None:
        """Belt and braces: the kernel's own name for the opened fd must be inside."""
        if not self.inside:
            return
        try:
            real = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            return  # no /proc: the O_NOFOLLOW walk is the guarantee
        root = str(self.scope.real_root)
        if real != root and not real.startswith(root.rstrip("/") + "/"):
            os.close(fd)
            raise OutsideScopeError(
                f"{self.shown!r} was moved outside the workspace during the call"
            )

    def write_atomic(self, data: bytes, *, mark: bytes | None = None) -> None:
        """Replace the file with `data` through a temporary name and rename: never writes
        through a hard link or a symlink into another file. `mark` is kept with the new
        content (an extended attribute, set before the rename so both arrive at once),
        where the file system has them."""
        self._require_parent()
        if self.name is None or self.is_dir:
            raise IsADirectoryError(21, f"{self.shown!r} is a folder")
        mode = stat.S_IMODE(self.stat.st_mode) if self.stat is not None else 0o644
        tmp = f".{self.name[:200]}.raf-{secrets.token_hex(4)}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(tmp, flags, mode, dir_fd=self.parent_fd)
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            if mark is not None:
                with contextlib.suppress(OSError):  # no extended attributes here
                    os.setxattr(fd, WRITE_MARK, mark)
            os.fsync(fd)
        except BaseException:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=self.parent_fd)
            raise
        os.close(fd)
        try:
            os.rename(tmp, self.name, src_dir_fd=self.parent_fd, dst_dir_fd=self.parent_fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=self.parent_fd)
            raise

    def read_mark(self) -> bytes | None:
        """The mark the last `write_atomic` left on this file, if any."""
        if self.name is None or not self.exists or self.is_dir:
            return None
        try:
            fd = self.open_read()
        except OSError:
            return None
        try:
            return os.getxattr(fd, WRITE_MARK)
        except OSError:
            return None
        finally:
            os.close(fd)

    def mkdir(self) -> bool:
        """Create this folder; False if it already exists as a folder."""
        self._require_parent()
        if self.name is None or self.is_dir:
            return False
        if self.exists:
            raise FileExistsError(17, f"{self.shown!r} exists and is not a folder")
        os.mkdir(self.name, 0o777, dir_fd=self.parent_fd)
        return True

    def remove(self, *, recursive: bool) -> str:
        """Delete this file, link or (empty, or with `recursive`) folder."""
        self._require_parent()
        if self.name is None:
            raise PermissionError(1, "refusing to remove the workspace root")
        if self.stat is None:
            raise FileNotFoundError(2, f"{self.shown!r} does not exist")
        if not stat.S_ISDIR(self.stat.st_mode):
            os.unlink(self.name, dir_fd=self.parent_fd)
            return "file" if stat.S_ISREG(self.stat.st_mode) else "link"
        if recursive:
            # fd-based rmtree: never follows a symlink inside the tree
            shutil.rmtree(self.name, dir_fd=self.parent_fd)
        else:
            os.rmdir(self.name, dir_fd=self.parent_fd)
        return "folder"


def locate(
    scope: WorkspaceScope,
    path: str,
    access: Access,
    *,
    approved: bool,
    follow_final: bool = True,
    create_dirs: bool = False,
) -> Location:
    """Check `path` for `access` and open its parent; raise OutsideScopeError if refused."""
    decision = scope.decide(path, access, follow_final=follow_final)
    resolved = decision.resolved
    if decision.action is RuleAction.DENY:
        raise OutsideScopeError(f"{path!r} is refused: {decision.reason}")
    if decision.action is RuleAction.APPROVE and not approved:
        raise OutsideScopeError(
            f"{path!r} needs a human's approval ({decision.reason}) and this call was not approved"
        )
    # hard-linked files may be read when the policy allows outside, the call was approved,
    # or a rule explicitly allowed this (hard-linked) file
    shared_ok = (
        scope.policy is ScopePolicy.ALLOW_ALL
        or approved
        or (access is Access.READ and resolved.links > 1 and decision.action is RuleAction.ALLOW)
    )
    if resolved.inside:
        text = os.path.expanduser(path) if path.startswith("~") else path
        parts = scope.relative_parts(text)
        if parts is None:
            raise OutsideScopeError(f"{path!r} changed during the call; try again")
        root_fd = os.open(scope.real_root, _DIR_FLAGS)
        try:
            found = scope.walk_parts(
                root_fd, parts, follow_final=follow_final, create_dirs=create_dirs
            )
        except WalkEscape as esc:
            os.close(root_fd)
            raise OutsideScopeError(f"{path!r} changed during the call ({esc.reason})") from None
        except BaseException:
            os.close(root_fd)
            raise
        owned = [*found.owned, root_fd]
        rel = "/".join(found.rel) or "."
        if resolved.relative is not None and rel != resolved.relative:
            # the path now leads elsewhere inside (a symlink was swapped): the rules
            # were judged for the old target, so refuse rather than guess
            for fd in owned:
                with contextlib.suppress(OSError):
                    os.close(fd)
            raise OutsideScopeError(f"{path!r} changed during the call; try again")
        return Location(
            scope=scope,
            shown=path,
            parent_fd=found.parent_fd,
            name=found.name,
            inside=True,
            path=scope.real_root.joinpath(*found.rel),
            stat=found.stat,
            shared_ok=shared_ok,
            owned=owned,
            approved=approved,
        )
    target = resolved.path if follow_final else outside_path(str(resolved.path), False)
    parent = target.parent
    if create_dirs:
        parent.mkdir(parents=True, exist_ok=True)
    try:
        parent_fd = os.open(parent, _DIR_FLAGS)
    except FileNotFoundError:
        parent_fd = -1
    st: os.stat_result | None = None
    if parent_fd >= 0:
        with contextlib.suppress(FileNotFoundError):
            st = os.stat(target.name, dir_fd=parent_fd, follow_symlinks=False)
    is_root = target == Path("/")
    return Location(
        scope=scope,
        shown=path,
        parent_fd=parent_fd,
        name=None if is_root else target.name,
        inside=False,
        path=target,
        stat=st,
        shared_ok=True,
        owned=[parent_fd] if parent_fd >= 0 else [],
    )


MAX_RULE_WALK = 20_000
"""Most entries below a moved or removed folder checked against the path rules."""


def subtree_verdict(
    scope: WorkspaceScope, path: str, accesses: tuple[Access, ...], *, walk: bool
) -> tuple[RuleAction, str] | None:
    """The strictest deny/approve that path rules give `path` (an inside path, not
    followed at its end) for `accesses`, and, with `walk`, everything below it when it is
    a folder: moving or removing a folder acts on all it holds, so `secrets/** read: deny`
    must also stop renaming `secrets`. None when nothing is restricted."""
    if not scope.restricts(accesses):
        return None
    resolved = scope.resolve_safe(path, follow_final=False)
    if not resolved.inside or resolved.relative is None:
        return None  # outside: the policy decides
    base = "" if resolved.relative == "." else resolved.relative
    worst: tuple[RuleAction, str] | None = None

    def consider(rel: str) -> None:
        nonlocal worst
        for access in accesses:
            action = scope.rule_action(rel, access)
            if action is None or action is RuleAction.ALLOW:
                continue
            if worst is None or (action is RuleAction.DENY and worst[0] is RuleAction.APPROVE):
                worst = (action, rel)

    if base:
        consider(base)
    if worst is not None and worst[0] is RuleAction.DENY:
        return worst
    if not walk or not os.path.isdir(resolved.path):
        return worst
    try:
        loc = locate(scope, path, Access.DELETE, approved=True, follow_final=False)
    except OutsideScopeError:
        return (RuleAction.DENY, base or ".")
    with contextlib.closing(loc):
        if not loc.is_dir:
            return worst
        top = loc.open_dir()
        try:
            seen = 0
            for dirpath, dirnames, filenames, _fd in os.fwalk(".", dir_fd=top):
                below = "" if dirpath == "." else dirpath[2:]
                for name in [*dirnames, *filenames]:
                    seen += 1
                    if seen > MAX_RULE_WALK:
                        return (RuleAction.DENY, f"{base or '.'} (over {MAX_RULE_WALK} entries)")
                    consider("/".join(p for p in (base, below, name) if p))
                    if worst is not None and worst[0] is RuleAction.DENY:
                        return worst
        finally:
            os.close(top)
    return worst


def enforce_subtree(
    scope: WorkspaceScope,
    path: str,
    accesses: tuple[Access, ...],
    *,
    walk: bool,
    approved: bool,
    verb: str,
) -> None:
    """Raise OutsideScopeError when the path rules forbid `verb` on `path` (see
    subtree_verdict), or ask for an approval this call does not have."""
    verdict = subtree_verdict(scope, path, accesses, walk=walk)
    if verdict is None:
        return
    action, rel = verdict
    if action is RuleAction.DENY:
        raise OutsideScopeError(f"cannot {verb} {path!r}: a path rule protects {rel!r}")
    if not approved:
        raise OutsideScopeError(
            f"{verb} {path!r} needs a human's approval (a path rule covers {rel!r}) and this "
            "call was not approved"
        )


@contextlib.contextmanager
def located(
    scope: WorkspaceScope,
    path: str,
    access: Access,
    *,
    approved: bool,
    follow_final: bool = True,
    create_dirs: bool = False,
) -> Iterator[Location]:
    """`locate` as a context manager that closes the fds it opened."""
    loc = locate(
        scope, path, access, approved=approved, follow_final=follow_final, create_dirs=create_dirs
    )
    try:
        yield loc
    finally:
        loc.close()
