"""What each program a shell call runs is: one table, read by every step.

The shell reader (:mod:`.shell`: which words wrap a program, which take a subcommand,
which options take a value), the outcomes (:mod:`.outcomes`: which exit status answers
a question, which programs probe, filter, or check the code), the shell corrections
(:mod:`agentmem.learning.shell_fixes`: which programs only read, which install) and the
domains (:mod:`agentmem.domains`: a step's domain by its command) all read
:data:`PROGRAMS`. Adding a program, or saying more about one, changes this file only;
``tests/test_programs.py`` checks that no other module keeps a table of programs and
that this one is consistent.

A :class:`Program` has :class:`Role` s (a program may have several: ``grep`` searches,
reads and answers with its exit status), a domain, the subcommands that say what a call
does (``cargo test`` is a test run, ``git status`` a read), the options that take the
next word as their value (``git -C dir``) and those whose value is a file-name pattern
(``find -name``, ``rg -g``), and for a runner the word after which it runs another program
(``uv run pytest`` is a ``pytest`` call).
"""

from __future__ import annotations

import enum
import functools
import re
from collections.abc import Iterable, Mapping, Sequence

import attrs

__all__ = [
    "CMD_SWITCHED",
    "GENERIC_SUBCOMMANDS",
    "PROGRAMS",
    "Program",
    "Role",
    "cmd_syntax",
    "command_jobs",
    "domain_names",
    "family",
    "get",
    "has",
    "is_interpreter",
    "is_python",
    "is_windows_command",
    "jobs",
    "listing",
    "named",
    "pattern_options",
    "project_commands",
    "same_job",
    "sub_roles",
]


class Role(str, enum.Enum):
    """What a program (or one of its subcommands) is, for learning."""

    SHELL = "shell"  #: runs a script (bash -c '...': read through to the script)
    WRAPPER = "wrapper"  #: starts the command after it (sudo, env, time, xargs)
    RUNNER = "runner"  #: runs the program named after its run word (uv run, bundle exec)
    LAUNCHER = "launcher"  #: fetches and runs the program named after it (npx, uvx)
    INTERPRETER = "interpreter"  #: runs a script or inline code (python, node)
    HOST = "host"  #: a package manager or build tool whose subcommand says what it does
    TARGETS = "targets"  #: a build tool that takes targets (make test)
    TEST = "test"  #: runs tests: its failure is usually the code's
    BUILD = "build"  #: builds: its failure is usually the code's
    LINT = "lint"  #: lints, formats or type-checks: its failure is usually the code's
    PACKAGES = "packages"  #: installs, adds or removes packages
    INSTALLER = "installer"  #: installs for the whole machine (apt, brew)
    MACHINE = "machine"  #: a wrapper that provides a program from the machine (nix-shell)
    VCS = "vcs"
    READER = "reader"  #: only reads or looks around: exploration, never a prerequisite
    ANSWERS = "answers"  #: exit status 1 answers a question (no match, files differ)
    PROBE = "probe"  #: asks whether something is there: "not there" is its answer
    FILTER = "filter"  #: passes its input on, trimmed, sorted or counted (| head)
    #: in a pipe, prints its input's lines cut or edited (| sed -n 1,50p, | awk 'NR<=50'):
    #: what it prints is the command's output still, and its status is its own
    LINES = "lines"
    SCENE = "scene"  #: sets the scene (cd, export, echo): says nothing of the job
    RUN = "run"  #: a host's run of a script or program (cargo run, npm run x)
    TASKS = "tasks"  #: runs the project's own named tasks (make X, just X, cargo xtask)
    LISTS = "lists"  #: lists a folder (ls, find, tree)
    EDITS = "edits"  #: changes a file's content (apply_patch, patch): a fix no step names
    #: moves, renames or removes files (mv, rm, git mv): a path it acted on earlier in a run
    #: is the run's own doing, never a fact of the project
    MOVES = "moves"
    #: makes files or folders (touch, mkdir, cp, ln, tee): a path it made earlier in a run is
    #: the run's own doing, never a fact of the project
    CREATES = "creates"
    CHDIR = "chdir"  #: changes the shell's working directory (cd, pushd, popd)
    WINDOWS = "windows"  #: a command of cmd or PowerShell, not a program bash can find (del)
    #: a wrapper that runs the command after it as it is (time, nice, nohup): a retry may
    #: add or drop it and still be the same command
    TRANSPARENT = "transparent"
    #: a wrapper that runs the command after it with more privilege (sudo, doas): a retry
    #: that drops it changed nothing that made it work; one that adds it may have
    PRIVILEGE = "privilege"
    STOPS = "stops"  #: stops processes (kill, pkill, killall)


#: The roles whose failure is usually the code's, not the call's.
CHECKS = frozenset({Role.TEST, Role.BUILD, Role.LINT})


@attrs.frozen
class Program:
    """One program (see the module doc)."""

    name: str
    roles: frozenset[Role] = frozenset()
    domain: str | None = None
    #: Subcommands by their roles, beyond :data:`GENERIC_SUBCOMMANDS` for a host.
    subcommands: Mapping[str, frozenset[Role]] = attrs.field(factory=dict)
    #: Its first operand is a subcommand (``git push``): the shell reader splits it off.
    takes_subcommand: bool = False
    #: Options that take the next word as their value.
    value_options: frozenset[str] = frozenset()
    #: For a runner: the word after which it runs another program (``uv run``).
    runs: str | None = None
    #: For a wrapper: how many words after its options are its own (``timeout 10 cmd``).
    own_words: int = 0
    #: ``run NAME`` runs the project's script NAME (``npm run build``): one subcommand.
    scripts: bool = False
    #: Options whose value names one of the project's own setups (``tox -e py312``).
    project_options: frozenset[str] = frozenset()
    #: Options whose value is a file-name pattern on purpose (``find -name 'Dockerfile*'``,
    #: ``rg -g '*.ts'``, ``grep --include='*.py'``): a word given to one is no path.
    pattern_options: frozenset[str] = frozenset()
    #: For a command of Windows' shells: the program of this table that does its job
    #: (``Select-String``: ``grep``), for :func:`jobs`. Its own roles stay ``WINDOWS``.
    stands_for: str | None = None
    #: Subcommands that take a subcommand of their own (``docker compose up``, ``gh pr
    #: create``): what one of them does is told by that second word (:func:`group_action`).
    groups: frozenset[str] = frozenset()
    #: For a program that prints what it fetches (``curl``, ``http``): the options that make
    #: it write a file instead. With none of them and no ``>``, it changes nothing here
    #: (:func:`only_prints`): it cannot have provided a program or a file.
    writes_with: frozenset[str] = frozenset()
    #: Options that, alone, do a job: ``df -h`` (human sizes), ``sort -V`` (a version
    #: sort). Elsewhere a bare ``-h`` or ``-V`` asks for usage or the version.
    alone: frozenset[str] = frozenset()
    #: Options that make it list files instead of its own job (``rg --files``).
    lists_with: frozenset[str] = frozenset()


def _roles(*roles: Role) -> frozenset[Role]:
    return frozenset(roles)


#: docker's (and podman's) subcommands that take one of their own.
_DOCKER_GROUPS = (
    "compose buildx builder container image network volume system context manifest plugin "
    "swarm node service stack secret config trust"
)


#: What a host's subcommand does (``cargo test``, ``npm install``, ``go vet``).
GENERIC_SUBCOMMANDS: Mapping[str, frozenset[Role]] = {
    **dict.fromkeys("test t tests nextest".split(), _roles(Role.TEST)),
    **dict.fromkeys("build check compile".split(), _roles(Role.BUILD)),
    **dict.fromkeys(
        "lint clippy fmt format vet typecheck type-check credo dialyzer".split(), _roles(Role.LINT)
    ),
    **dict.fromkeys(
        "install i ci add remove rm uninstall update upgrade sync lock get mod restore".split(),
        _roles(Role.PACKAGES),
    ),
    "run": _roles(Role.RUN),
}

_GIT_SUBCOMMANDS: Mapping[str, frozenset[Role]] = {
    **dict.fromkeys("status log diff show branch remote config".split(), _roles(Role.READER)),
    "rev-parse": _roles(Role.READER, Role.ANSWERS, Role.PROBE),
    "ls-files": _roles(Role.READER, Role.ANSWERS, Role.LISTS),
    **dict.fromkeys("grep merge-base check-ignore".split(), _roles(Role.ANSWERS)),
    **dict.fromkeys("show-ref cat-file ls-remote".split(), _roles(Role.PROBE)),
    **dict.fromkeys("mv rm".split(), _roles(Role.MOVES)),
}


def _many(
    names: str,
    *roles: Role,
    domain: str | None = None,
    takes_subcommand: bool = False,
    runs: str | None = None,
    pattern_options: str = "",
    alone: str = "",
) -> list[Program]:
    return [
        Program(
            n,
            frozenset(roles),
            domain,
            takes_subcommand=takes_subcommand,
            runs=runs,
            pattern_options=frozenset(pattern_options.split()),
            alone=frozenset(alone.split()),
        )
        for n in names.split()
    ]


#: cmd's commands and PowerShell's cmdlets, each with the program of this table that does
#: its job (:attr:`Program.stands_for`).
_WINDOWS_JOBS: tuple[tuple[str, str], ...] = (
    ("del", "rm"), ("erase", "rm"), ("copy", "cp"), ("move", "mv"), ("ren", "mv"),
    ("cls", "clear"), ("md", "mkdir"), ("rd", "rmdir"),
    ("Select-String", "grep"), ("Get-ChildItem", "ls"), ("Get-Content", "cat"),
    ("Select-Object", "head"), ("Sort-Object", "sort"), ("Measure-Object", "wc"),
    ("Remove-Item", "rm"), ("Move-Item", "mv"), ("Rename-Item", "mv"),
    ("Copy-Item", "cp"), ("New-Item", "touch"), ("Test-Path", "test"),
    ("Set-Location", "cd"), ("Start-Sleep", "sleep"), ("Write-Output", "echo"),
    ("Write-Host", "echo"), ("Get-Location", "pwd"),
)  # fmt: skip

_TABLE: list[Program] = [
    # shells and the words that start a command without being it
    *_many("bash sh zsh dash fish", Role.SHELL),
    Program(
        "sudo",
        _roles(Role.WRAPPER, Role.MACHINE, Role.PRIVILEGE),
        value_options=frozenset("-u -g -h -p -C -D".split()),
    ),
    *_many("doas", Role.WRAPPER, Role.MACHINE, Role.PRIVILEGE),
    Program(
        "env",
        _roles(Role.WRAPPER, Role.READER),
        value_options=frozenset("-u -C --chdir --unset".split()),
    ),
    Program("nice", _roles(Role.WRAPPER, Role.TRANSPARENT), value_options=frozenset({"-n"})),
    Program(
        "timeout",
        _roles(Role.WRAPPER, Role.TRANSPARENT),
        value_options=frozenset("-s -k --signal --kill-after".split()),
        own_words=1,
    ),
    *_many("nohup exec builtin stdbuf", Role.WRAPPER, Role.TRANSPARENT),
    # GNU time's format and output file are its own words (time -f '%e s' make)
    Program(
        "time",
        _roles(Role.WRAPPER, Role.TRANSPARENT),
        value_options=frozenset("-f --format -o --output".split()),
    ),
    *_many("xargs", Role.WRAPPER),
    # command -v x: a probe (see outcomes)
    Program("command", _roles(Role.WRAPPER, Role.TRANSPARENT)),
    Program("nix-shell", _roles(Role.MACHINE)),
    *_many("npx bunx pnpx uvx", Role.LAUNCHER),
    # version control
    Program(
        "git",
        _roles(Role.VCS),
        "git",
        _GIT_SUBCOMMANDS,
        True,
        frozenset("-C -c --git-dir --work-tree".split()),
    ),
    Program(
        "gh",
        _roles(Role.VCS),
        domain="git",
        takes_subcommand=True,
        groups=frozenset("pr issue repo run workflow release gist auth secret cache label".split()),
    ),
    Program("hub", _roles(Role.VCS), domain="git", takes_subcommand=True),
    *_many("git-lfs tig", Role.VCS, domain="git"),
    # containers and clusters
    Program(
        "kubectl",
        domain="k8s",
        takes_subcommand=True,
        value_options=frozenset("-n --namespace --context".split()),
    ),
    Program("helm", domain="k8s", takes_subcommand=True),
    *_many("kustomize minikube kind k3d k9s oc skaffold", domain="k8s"),
    Program(
        "docker",
        domain="docker",
        takes_subcommand=True,
        value_options=frozenset("-H --context -c".split()),
        groups=frozenset(_DOCKER_GROUPS.split()),
    ),
    Program(
        "podman", domain="docker", takes_subcommand=True, groups=frozenset(_DOCKER_GROUPS.split())
    ),
    *_many("docker-compose buildah nerdctl", domain="docker"),
    # package managers and build tools that take a subcommand
    Program(
        "npm",
        _roles(Role.HOST),
        "packages",
        {"run-script": _roles(Role.TEST)},
        True,
        frozenset("--prefix -w --workspace".split()),
        runs="exec",
        scripts=True,
    ),
    Program(
        "yarn",
        _roles(Role.HOST),
        "packages",
        takes_subcommand=True,
        value_options=frozenset({"--cwd"}),
        runs="exec",
        scripts=True,
    ),
    Program(
        "pnpm",
        _roles(Role.HOST),
        "packages",
        takes_subcommand=True,
        value_options=frozenset("-C --dir -F --filter".split()),
        runs="exec",
        scripts=True,
    ),
    Program(
        "bun",
        _roles(Role.HOST, Role.INTERPRETER),
        "packages",
        takes_subcommand=True,
        value_options=frozenset({"--cwd"}),
        scripts=True,
    ),
    *_many("deno", Role.HOST, Role.INTERPRETER, takes_subcommand=True),
    *_many("pip pip3 mamba gem composer", Role.HOST, domain="packages", takes_subcommand=True),
    Program("pipx", _roles(Role.HOST, Role.LAUNCHER), "packages", takes_subcommand=True),
    Program("poetry", _roles(Role.HOST), "packages", takes_subcommand=True, runs="run"),
    # the options whose value is the next word (conda run -n ENV python x.py: python runs)
    Program(
        "uv",
        _roles(Role.HOST),
        "packages",
        takes_subcommand=True,
        runs="run",
        value_options=frozenset(
            "--with --python -p --project --directory --package --extra --group --env-file "
            "--index".split()
        ),
    ),
    Program(
        "conda",
        _roles(Role.HOST),
        "packages",
        takes_subcommand=True,
        runs="run",
        value_options=frozenset("-n --name -p --prefix".split()),
    ),
    *_many("pdm hatch", Role.HOST, takes_subcommand=True, runs="run"),
    Program("pipenv", _roles(Role.HOST), runs="run"),
    Program("bundle", _roles(Role.HOST), "packages", takes_subcommand=True, runs="exec"),
    *_many(
        "brew apt apt-get dnf yum",
        Role.HOST,
        Role.INSTALLER,
        domain="packages",
        takes_subcommand=True,
    ),
    *_many("apk pacman", Role.HOST, Role.INSTALLER, domain="packages"),
    *_many("nix-env port choco winget", Role.INSTALLER),
    Program(
        "cargo",
        _roles(Role.HOST),
        "build",
        {"xtask": _roles(Role.TASKS), "make": _roles(Role.TASKS)},
        takes_subcommand=True,
        value_options=frozenset("-C --manifest-path".split()),
    ),
    *_many("go mix dotnet swift", Role.HOST, domain="build", takes_subcommand=True),
    *_many("rustup nix rails rake django-admin flask", takes_subcommand=True),
    # build tools that take targets, and bundlers
    Program(
        "make",
        _roles(Role.BUILD, Role.TARGETS, Role.TASKS),
        "build",
        value_options=frozenset("-C -f -j".split()),
    ),
    *_many("ninja", Role.BUILD, Role.TARGETS, Role.TASKS, domain="build"),
    *_many(
        "cmake bazel gradle gradlew mvn mvnw ant meson", Role.BUILD, Role.TARGETS, domain="build"
    ),
    *_many("just task", Role.TASKS),
    *_many("tsc webpack vite msbuild", Role.BUILD, domain="build"),
    *_many("esbuild rollup", Role.BUILD),
    *_many("apply_patch", Role.BUILD, Role.EDITS),
    # modules that python -m runs as programs
    *_many("unittest nose2", Role.TEST, domain="test"),
    *_many("venv ensurepip", Role.PACKAGES, domain="packages"),
    # tests and linters
    *_many(
        "pytest py.test jest vitest mocha ava rspec phpunit ctest playwright cypress",
        Role.TEST,
        domain="test",
    ),
    Program("tox", _roles(Role.TEST), "test", project_options=frozenset({"-e"})),
    Program("nox", _roles(Role.TEST), "test", project_options=frozenset({"-s"})),
    *_many(
        "ruff flake8 pylint mypy pyright eslint prettier black isort shellcheck golangci-lint "
        "rubocop credo clippy",
        Role.LINT,
        domain="lint",
    ),
    # interpreters (python, python3, python3.12 and py: see is_interpreter)
    *_many("node ruby perl php elixir Rscript", Role.INTERPRETER),
    # files: readers, probes, filters
    *_many("ls", Role.READER, Role.PROBE, Role.LISTS, domain="fs", alone="-h"),
    # GNU dir and vdir (coreutils' ls in columns; Git Bash has them, so cmd's ``dir /b``
    # reaches GNU dir there and lists, reading ``/b`` as a file)
    *_many("dir vdir", Role.READER, Role.LISTS, domain="fs"),
    *_many("stat", Role.READER, Role.PROBE, domain="fs"),
    *_many("realpath readlink", Role.READER, Role.PROBE, domain="fs"),
    *_many("which type", Role.READER, Role.PROBE, Role.ANSWERS),
    *_many("where whereis", Role.PROBE),
    *_many("test [[", Role.READER, Role.PROBE, Role.ANSWERS),
    *_many("[", Role.PROBE, Role.ANSWERS),
    *_many("head tail wc less more cat", Role.READER, Role.FILTER, domain="fs"),
    *_many("sort", Role.READER, Role.FILTER, alone="-h -V"),
    *_many("uniq cut nl", Role.READER, Role.FILTER),
    *_many("tr column fold fmt", Role.FILTER),
    *_many("tee", Role.FILTER, Role.CREATES),
    *_many(
        "find",
        Role.READER,
        Role.LISTS,
        domain="fs",
        pattern_options="-name -iname -path -ipath -wholename",
    ),
    *_many("tree", Role.READER, Role.LISTS, domain="fs"),
    *_many("du", Role.READER, domain="fs", pattern_options="--exclude", alone="-h"),
    *_many("df free", Role.READER, domain="fs", alone="-h"),
    *_many("file", Role.READER, domain="fs"),
    *_many("sed awk", Role.READER, Role.LINES, domain="fs"),
    *_many("cmp", Role.READER, Role.ANSWERS),
    Program("diff", _roles(Role.READER, Role.ANSWERS), "fs"),
    *_many("mv rm rmdir", Role.MOVES, domain="fs"),
    *_many("cp touch ln", Role.CREATES, domain="fs"),
    # -m: the new folders' mode, no folder (review 27: 755 was claimed absent)
    Program("mkdir", _roles(Role.CREATES), "fs", value_options=frozenset({"-m"})),
    *_many("chmod chown zip unzip", domain="fs"),
    *_many("tar", domain="fs", pattern_options="--exclude"),
    *_many("patch", Role.EDITS, domain="fs"),
    *_many("pwd basename dirname printenv id whoami uname date jq yq od xxd", Role.READER),
    *_many(
        "grep egrep fgrep",
        Role.READER,
        Role.ANSWERS,
        domain="search",
        pattern_options="--include --exclude --exclude-dir",
    ),
    Program(
        "rg",
        _roles(Role.READER, Role.ANSWERS),
        "search",
        pattern_options=frozenset("-g --glob --iglob".split()),
        lists_with=frozenset({"--files"}),
    ),
    *_many("ag ack", Role.READER, Role.ANSWERS, domain="search", pattern_options="-g"),
    # fd -g: the pattern (the next word) is a glob, not a regex
    *_many(
        "fd",
        Role.READER,
        Role.ANSWERS,
        Role.LISTS,
        domain="search",
        pattern_options="-g --glob --exclude",
    ),
    *_many("pgrep pidof", Role.ANSWERS),
    # exit status 1: no process matched (nothing to stop), whatever the pattern
    *_many("pkill killall", Role.ANSWERS, Role.STOPS),
    *_many("kill fuser taskkill", Role.STOPS),
    *_many("echo printf true false", Role.READER, Role.SCENE),
    *_many("cd pushd popd", Role.SCENE, Role.CHDIR),
    *_many("export set unset source . sleep : alias clear wait exit read", Role.SCENE),
    # cmd's own commands and PowerShell's cmdlets (any other Verb-Noun name: see
    # is_windows_command): no program bash finds; each with the program that does its job
    *(Program(n, _roles(Role.WINDOWS), stands_for=job) for n, job in _WINDOWS_JOBS),
    # the world beyond the files
    Program(
        "curl",
        domain="web",
        writes_with=frozenset("-o -O --output --remote-name --remote-name-all".split()),
    ),
    *(
        Program(n, domain="web", writes_with=frozenset("-d --download -o --output".split()))
        for n in ("http", "https", "httpie")
    ),
    Program("wget", domain="web"),  # writes what it fetches to a file unless told not to
    *_many("psql mysql sqlite3 redis-cli mongosh mongo", domain="db"),
    *_many("aws gcloud az terraform", domain="cloud", takes_subcommand=True),
    *_many("gsutil tofu pulumi", domain="cloud"),
    *_many("ssh scp", domain="remote"),
    *_many("rsync", domain="remote", pattern_options="--include --exclude"),
    Program("systemctl", domain="system", takes_subcommand=True),
    *_many("journalctl service", domain="system"),
]


def _build(table: Iterable[Program]) -> dict[str, Program]:
    out: dict[str, Program] = {}
    for p in table:
        if p.name in out and out[p.name] != p:
            raise AssertionError(f"program {p.name!r} is listed twice, differently")
        out[p.name] = p
    return out


#: Every program agentmem knows, by name.
PROGRAMS: Mapping[str, Program] = _build(_TABLE)

_PYTHON = re.compile(r"python[0-9.]*|py")
#: Families of programs that stand in for each other (``python`` / ``python3``).
_FAMILY = re.compile(r"^(python|pip|node|ruby|perl|php|gcc|g\+\+|clang|java)([0-9.]*)$")


def get(name: str) -> Program | None:
    """The program called ``name``, or None (a python of any version is ``python``'s)."""
    found = PROGRAMS.get(name)
    if found is None and _PYTHON.fullmatch(name):
        return Program(name, _roles(Role.INTERPRETER))
    return found


def has(name: str, role: Role) -> bool:
    """Whether program ``name`` has ``role``."""
    p = get(name)
    return p is not None and role in p.roles


def named(role: Role) -> frozenset[str]:
    """The names of the programs that have ``role``."""
    return frozenset(n for n, p in PROGRAMS.items() if role in p.roles)


def sub_roles(name: str, subcommand: str | None) -> frozenset[Role]:
    """The roles of ``name``'s subcommand (its own table's, else a host's generic ones)."""
    p = get(name)
    if p is None or not subcommand:
        return frozenset()
    own = p.subcommands.get(subcommand)
    if own is not None:
        return own
    if Role.HOST in p.roles:
        if subcommand.startswith("run "):  # npm run test:unit: the script's name says
            script = subcommand[len("run ") :].split(":")[0]
            return GENERIC_SUBCOMMANDS.get(script, frozenset()) - {Role.RUN}
        return GENERIC_SUBCOMMANDS.get(subcommand, frozenset())
    return frozenset()


#: Options of a group subcommand that take a value (``docker compose -p app up``, ``gh pr
#: -R x/y view``): the value is no action.
_GROUP_VALUES = frozenset(
    "-f --file -p --project-name --profile --env-file --project-directory --ansi --progress "
    "--parallel -R --repo".split()
)


def group_action(name: str, subcommand: str | None, words: Sequence[str]) -> str | None:
    """For a subcommand of ``name`` that takes one of its own (:attr:`Program.groups`),
    that one: the first plain word of ``words`` (the words after the subcommand) that is
    no option's value (``docker compose -f x.yml -p app config``: ``config``); None when
    the word after an option not known to take a value could be its value (review 26)."""
    p = get(name)
    if p is None or subcommand is None or subcommand not in p.groups:
        return None
    after = ""  # the option before this word, when it may take this word as its value
    for w in words:
        if w.startswith("-"):
            after = "" if "=" in w else w
            continue
        if after in _GROUP_VALUES:
            after = ""
            continue
        if re.fullmatch(r"[a-z][a-z-]*", w):
            return None if after else w
        after = ""
    return None


def is_python(name: str) -> bool:
    """Whether ``name`` is a python of any version (``python -m x`` runs module x)."""
    return bool(_PYTHON.fullmatch(name))


#: Programs whose job a module of Python's standard library does (``unzip`` missing:
#: ``python3 -c "import zipfile; ..."``), read by the ``program`` correction.
_PYTHON_MODULES: dict[str, str] = {
    "unzip": "zipfile", "zip": "zipfile", "tar": "tarfile", "gzip": "gzip", "gunzip": "gzip",
    "jq": "json", "sqlite3": "sqlite3", "base64": "base64", "sha256sum": "hashlib",
    "md5sum": "hashlib", "shasum": "hashlib", "wget": "urllib", "curl": "urllib",
}  # fmt: skip


#: The script files each interpreter runs, by their suffix (its family's: python).
_SCRIPT_SUFFIXES: dict[str, tuple[str, ...]] = {
    "node": (".js", ".mjs", ".cjs"), "nodejs": (".js", ".mjs", ".cjs"),
    "bun": (".js", ".mjs", ".ts"), "deno": (".js", ".ts"), "python": (".py",),
    "ruby": (".rb",), "perl": (".pl",), "php": (".php",),
}  # fmt: skip


def script_suffixes(name: str) -> tuple[str, ...]:
    """The suffixes of the script files interpreter ``name`` runs (none when unknown)."""
    return _SCRIPT_SUFFIXES.get("python" if is_python(name) else name, ())


#: The option that gives each interpreter its code inline (node's -r preloads a module,
#: ruby's -c checks a file's syntax): another option's value is no inline script.
_EVAL_FLAGS: dict[str, tuple[str, ...]] = {
    "python": ("-c",), "php": ("-r",), "deno": ("eval",), "ruby": ("-e",),
}  # fmt: skip


def eval_flags(name: str) -> tuple[str, ...]:
    """The options with which interpreter ``name`` (a python of any version: ``python``)
    runs code given inline (``-e`` and ``--eval`` when the table says nothing)."""
    return _EVAL_FLAGS.get("python" if is_python(name) else name, ("-e", "--eval"))


def python_module(name: str) -> str | None:
    """The standard-library module of Python's that does program ``name``'s job, if any."""
    return _PYTHON_MODULES.get(name)


def is_interpreter(name: str) -> bool:
    """Whether ``name`` runs scripts (``python3.12``, ``node``, ``deno``)."""
    return bool(_PYTHON.fullmatch(name)) or has(name, Role.INTERPRETER)


#: A PowerShell cmdlet's name: Verb-Noun (``Start-Sleep``, ``Get-ChildItem``).
_CMDLET = re.compile(r"[A-Z][a-z]+-[A-Z][A-Za-z]+")


def is_windows_command(name: str) -> bool:
    """Whether ``name`` is a command of Windows' shells, cmd's (``del``) or a PowerShell
    cmdlet (``Start-Sleep``), that a bash (Git Bash) finds no program for."""
    return bool(_CMDLET.fullmatch(name)) or has(name, Role.WINDOWS)


#: What a program's roles say of the job it does for a call: a command that stood in for
#: another did its job only when they share one (searching contents, listing a folder,
#: printing a file or output, moving or removing, making, asking whether a path is there,
#: changing folder).
_JOBS: Mapping[Role, str] = {
    Role.LISTS: "list",
    Role.FILTER: "print",
    Role.LINES: "print",
    Role.MOVES: "move",
    Role.CREATES: "make",
    Role.PROBE: "probe",
    Role.CHDIR: "chdir",
}


def jobs(name: str) -> frozenset[str]:
    """The jobs program ``name`` does (:data:`_JOBS`; ``search`` for a program of the search
    domain), and always its own name: a Windows command's are its stand-in's
    (:attr:`Program.stands_for`: ``Select-String`` searches as ``grep`` does)."""
    p = get(name)
    if p is not None and p.stands_for:
        return jobs(p.stands_for)
    if p is None:
        return frozenset({name})
    found = {_JOBS[r] for r in p.roles if r in _JOBS} | {name}
    return frozenset(found | ({"search"} if p.domain == "search" else set()))


def command_jobs(name: str, subcommand: str | None, flags: Iterable[str] = ()) -> frozenset[str]:
    """The jobs of one call of ``name`` (:func:`jobs`), narrowed by what its subcommand or
    options make it do: ``git ls-files`` and ``rg --files`` list (and ``rg`` alone
    searches), so the two do one job."""
    p = get(name)
    own = frozenset(_JOBS[r] for r in sub_roles(name, subcommand) if r in _JOBS)
    if p is not None and set(flags) & p.lists_with:
        own |= {"list"}
    return own or jobs(name)


def same_job(name: str, others: Iterable[str]) -> bool:
    """Whether program ``name`` does a job of one of ``others`` (:func:`jobs`)."""
    mine = jobs(name)
    return any(mine & jobs(o) for o in others)


def only_prints(name: str, args: Sequence[str]) -> bool:
    """Whether program ``name`` called with ``args`` (the words after it) only prints what
    it fetches (:attr:`Program.writes_with`: ``curl URL``, not ``curl -sLo x URL``). A
    short option may sit in a bundle (``-sSLO``); ``-o -`` (``--output -``, ``-o-``) writes
    to the standard output. The caller checks for ``>`` and ``|``."""
    p = get(name)
    if p is None or not p.writes_with:
        return False
    short = {o[1] for o in p.writes_with if len(o) == 2}
    for k, a in enumerate(args):
        nxt = args[k + 1] if k + 1 < len(args) else ""
        if a.startswith("--"):
            opt, eq, value = a.partition("=")
            if opt not in p.writes_with:
                continue
            value = value if eq else nxt
        elif a.startswith("-") and short & set(a[1:]):
            at = next(n for n, ch in enumerate(a) if n and ch in short)
            opt, value = "-" + a[at], a[at + 1 :] or nxt
        else:
            continue
        if not (opt in _TO_A_FILE and value == "-"):
            return False
    return True


#: The options of :attr:`Program.writes_with` that take the file's name (``-`` is the
#: standard output); the others name no file (``-O``: the URL's own name).
_TO_A_FILE = frozenset({"-o", "--output"})


def does_alone(name: str, option: str) -> bool:
    """Whether ``option`` alone makes program ``name`` do a job (:attr:`Program.alone`:
    ``df -h``), not ask for its usage or version."""
    p = get(name)
    return p is not None and option in p.alone


def pattern_options(name: str) -> frozenset[str]:
    """The options of program ``name`` whose value is a file-name pattern on purpose
    (:attr:`Program.pattern_options`): ``find``'s ``-name``, ``rg``'s ``-g``, but never
    ``npm``'s ``-g`` (install globally). (Not ``-e``: ``pip install -e '.[dev]'`` is a
    path.)"""
    p = get(name)
    return p.pattern_options if p is not None else frozenset()


def pattern_first(name: str) -> bool:
    """Whether program ``name`` reads its first operand as a pattern, not as a place: the
    programs of the search domain (``grep PATTERN PATH``, ``rg``, ``fd``), unless ``-e`` or
    ``-f`` gives the pattern (the caller checks)."""
    p = get(name)
    return p is not None and p.domain == "search"


#: cmd's builtins that take a ``/X`` switch bash reads as a path (``cd /d``, ``dir /b``).
CMD_SWITCHED = frozenset(
    {"cd", "chdir", "dir", "copy", "xcopy", "move", "del", "erase", "rd", "rmdir"}
)
#: cmd's ``if [not] exist PATH command``, which bash reads as an unfinished ``if``.
_CMD_IF = re.compile(r"^if\s+(?:/i\s+)?(not\s+)?(exist|defined|errorlevel)\b", re.IGNORECASE)


def cmd_syntax(segment: str) -> str | None:
    """The cmd construct a command (one segment of a line, between ``&&`` / ``;`` /
    ``|``) is written in, that bash rejects or reads otherwise: ``cd /d``, ``dir /b``,
    ``if not exist``; None for any other command."""
    text = segment.strip()
    m = _CMD_IF.match(text)
    if m:
        return f"if {'not ' if m.group(1) else ''}{m.group(2).lower()}"
    words = text.split()
    if len(words) >= 2 and words[0].lower() in CMD_SWITCHED:
        switch = next((w for w in words[1:] if re.fullmatch(r"/[A-Za-z]", w)), None)
        if switch is not None:
            return f"{words[0].lower()} {switch.lower()}"
    return None


def family(name: str) -> str | None:
    """The family of a versioned program (``python3`` -> ``python``), or None."""
    m = _FAMILY.match(name)
    return m.group(1) if m else None


@functools.lru_cache(maxsize=1)
def project_commands() -> re.Pattern[str]:
    """The commands that name a project's own tasks, scripts or setups in a lesson's text:
    ``make X`` / ``just X`` (:attr:`Role.TASKS`), ``npm run X`` (a program's scripts),
    ``uv run X`` (a runner), ``tox -e X`` (:attr:`Program.project_options`), ``cargo
    xtask`` (a subcommand of the project's), ``python -m X`` for a module that is no
    known program."""
    ps = PROGRAMS.values()

    def alt(names: Iterable[str]) -> str:
        return "|".join(re.escape(n) for n in sorted(names, key=lambda n: (-len(n), n)))

    tasks = [p.name for p in ps if Role.TASKS in p.roles]
    scripts = [p.name for p in ps if p.scripts]
    runners = [p.name for p in ps if p.runs == "run"]
    options = [
        rf"\b{re.escape(p.name)}\s+{re.escape(o)}\s*\S+" for p in ps for o in p.project_options
    ]
    subs = []
    for p in ps:
        own = [k for k, r in p.subcommands.items() if Role.TASKS in r]
        if own:
            subs.append(rf"\b{re.escape(p.name)}\s+(?:{alt(own)})\b")
    # python -m of a tool (pytest, pip, venv, mypy) is no project's command
    tools = [p.name for p in ps if p.domain in ("test", "packages", "lint")]
    modules = alt([*(n for n in tools if re.fullmatch(r"[\w.]+", n)), "http.server", "json.tool"])
    return re.compile(
        "|".join(
            [
                rf"\b(?:{alt(tasks)})\s+[A-Za-z][\w:.-]*",
                rf"\b(?:{alt(scripts)})\s+run\s+[\w:.-]+",
                *options,
                rf"\b(?:{alt(runners)})\s+run\s+\S+",
                *subs,
                rf"\bpython[0-9.]*\s+-m\s+(?!(?:{modules})\b)[\w.]+",
            ]
        ),
        re.IGNORECASE,
    )


def listing(name: str) -> bool:
    """Whether ``name`` lists a folder (``ls``, ``find``, ``tree``, ``fd``)."""
    return has(name, Role.LISTS)


def domain_names() -> frozenset[str]:
    """The programs that have a domain (known words: never a project's identifier)."""
    return frozenset(n for n, p in PROGRAMS.items() if p.domain)
