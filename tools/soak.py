"""A longer crash-and-concurrency soak of agentmem: kills, concurrent writers and readers, fuzz.

    python tools/soak.py --minutes 10

Runs rounds until the time is up. Each round:

1. **Kills**: ``agentmem learn --no-model`` on a 30-group library SIGKILLed at random
   moments (0 .. the measured duration of an unkilled run), and at a random write
   inside its apply transaction; ``agentmem record`` of a large JSON-lines file
   SIGKILLed at random moments and at a random step row. After each: the before or
   the after state exactly, every invariant (``tools/crashlib.py``), and a clean resume.
2. **Load**: six worker processes (recorders through the API and the CLI, feedback,
   readers) in loops while ``agentmem learn`` runs, or is SIGKILLed at a random
   moment, in another; meanwhile the Hypothesis fuzz suite (``tests/test_fuzz.py``)
   runs in a second process with more examples.

Prints the figures at the end (kills survived, processes, writes under load, reader
observations, fuzz inputs tried, anything lost or broken) and exits 1 if anything
was lost or broken, 0 otherwise. ``--json FILE`` also writes them as JSON.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import crashlib


class Soak:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.rng = random.Random(args.seed)
        self.deadline = time.monotonic() + args.minutes * 60
        self.t0 = time.monotonic()
        self.work = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="soak-"))
        self.work.mkdir(parents=True, exist_ok=True)
        self.figures: Counter[str] = Counter()
        self.phases: Counter[str] = Counter()
        self.failures: list[str] = []
        self.lost: list[str] = []
        self.anomalies: list[str] = []

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def say(self, msg: str) -> None:
        print(f"[soak {time.monotonic() - self.t0:7.1f}s] {msg}", flush=True)

    def fail(self, what: str, e: BaseException) -> None:
        text = f"{what}: {type(e).__name__}: {e}"
        self.failures.append(text)
        self.say("FAILURE " + text[:2000])
        if not isinstance(e, AssertionError):
            traceback.print_exc()

    # -- phases ------------------------------------------------------------------------------

    def prepare(self) -> None:
        self.say(f"preparing in {self.work} (seed {self.args.seed})")
        self.learn = crashlib.prepare_learn_kills(self.work / "learn", groups=self.args.groups)
        self.record = crashlib.prepare_record_kills(self.work / "record", n=self.args.records)
        self.say(
            f"learn: {self.learn.before.short()} -> {self.learn.after.short()}, "
            f"{self.learn.duration:.2f} s unkilled; record: {self.record.n} trajectories, "
            f"{self.record.duration:.2f} s unkilled"
        )

    def kills(self) -> None:
        for _ in range(self.args.kills_per_round):
            if self.left() <= 0:
                return
            delay = self.rng.uniform(0, self.learn.duration)
            resume = self.rng.choice(["cli", "inprocess"])
            try:
                o = crashlib.kill_learn_trial(
                    self.learn, self.work / "learn" / "work.db", delay, resume=resume
                )
            except Exception as e:
                self.fail(f"learn kill at {delay:.3f} s", e)
                continue
            if o["killed"]:
                self.figures["learn kills survived"] += 1
                self.phases[f"learn {o['phase']}"] += 1
            else:
                self.figures["learn runs finished before the kill"] += 1
        at = self.learn.die_point(
            self.rng.choice(["put", "journal", "remove", "finish"]), self.rng.random()
        )
        try:
            crashlib.die_learn_trial(self.learn, self.work / "learn" / "die.db", at)
            self.figures["learn kills survived"] += 1
            self.phases["learn inside apply transaction"] += 1
        except Exception as e:
            self.fail(f"learn killed inside its transaction at {at}", e)
        for _ in range(self.args.record_kills_per_round):
            if self.left() <= 0:
                return
            delay = self.rng.uniform(0, self.record.duration)
            try:
                o = crashlib.kill_record_trial(self.record, self.work / "record" / "work.db", delay)
            except Exception as e:
                self.fail(f"record kill at {delay:.3f} s", e)
                continue
            if o["killed"]:
                self.figures["record kills survived"] += 1
                self.phases[f"record {o['state']}"] += 1
        at = f"step:{self.rng.randint(1, self.record.n * 8)}"
        try:
            crashlib.die_record_trial(self.record, self.work / "record" / "die.db", at)
            self.figures["record kills survived"] += 1
            self.phases["record inside transaction"] += 1
        except Exception as e:
            self.fail(f"record killed inside its transaction at {at}", e)

    def start_fuzz(self, n: int) -> subprocess.Popen[bytes] | None:
        if self.args.fuzz_examples <= 0:
            return None
        env = crashlib.cli_env(
            self.work / "unused.db", AGENTMEM_FUZZ_EXAMPLES=str(self.args.fuzz_examples)
        )
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            str(crashlib.ROOT / "tests" / "test_fuzz.py"),
            "-q",
            "-p",
            "no:cacheprovider",
            f"--hypothesis-seed={self.args.seed + n}",
        ]
        return subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=str(crashlib.ROOT)
        )

    def finish_fuzz(self, p: subprocess.Popen[bytes] | None) -> None:
        if p is None:
            return
        out, _ = p.communicate()
        text = out.decode(errors="replace")
        m = re.search(r"\[fuzz\] inputs tried: (\d+)", text)
        if m:
            self.figures["fuzz inputs tried"] += int(m.group(1))
        hits_line = (
            text.split("known bugs hit:", 1)[1].split("\n", 1)[0]
            if "known bugs hit:" in text
            else ""
        )
        for bug, hits in re.findall(r"'([a-z0-9-]+)': (\d+)", hits_line):
            self.figures[f"fuzz known-bug hits ({bug})"] += int(hits)
        if p.returncode != 0:
            self.fail("fuzz suite", AssertionError(text[-4000:]))

    def load(self, n: int) -> None:
        kill = n % 2 == 1
        delay = self.rng.uniform(0, self.learn.duration * 2) if kill else None
        fuzz = self.start_fuzz(n)
        try:
            r = crashlib.run_concurrency(
                self.learn.pristine,
                self.work / "load" / "lib.db",
                self.work / "load" / "run",
                before=self.learn.before,
                after=self.learn.after,
                recorders=2,
                cli_recorders=1,
                feedback=1,
                readers=2,
                min_iters=self.args.min_iters,
                kill_learn_after=delay,
                after_ref=self.learn.pristine.parent / "after-0.db",
            )
        except Exception as e:
            self.fail(f"load round {n}", e)
            r = None
        finally:
            self.finish_fuzz(fuzz)
        if r is None:
            return
        self.figures["processes"] += r.processes
        self.figures["writes under load"] += r.writes
        self.figures["reader observations"] += r.observations
        self.figures["load rounds"] += 1
        if r.learn_killed:
            self.figures["learners killed under load"] += 1
        self.lost += r.lost
        self.anomalies += r.retrieve_anomalies
        for p in r.problems:
            self.failures.append(f"load round {n}: {p}")
        if r.problems or r.lost:
            self.say(f"load round {n}: problems {r.problems[:3]} lost {r.lost[:3]}")

    # -- driver ------------------------------------------------------------------------------

    def run(self) -> int:
        self.prepare()
        n = 0
        while self.left() > 0:
            n += 1
            self.kills()
            if self.left() <= 0:
                break
            self.load(n)
            self.say(
                f"round {n}: {dict(self.figures)}; failures {len(self.failures)}, "
                f"lost {len(self.lost)}"
            )
        return self.report(n)

    def report(self, rounds: int) -> int:
        f = self.figures
        kills = f["learn kills survived"] + f["record kills survived"]
        summary: dict[str, Any] = {
            "minutes": round((time.monotonic() - self.t0) / 60, 2),
            "rounds": rounds,
            "seed": self.args.seed,
            "kills survived": kills,
            "learn kills survived": f["learn kills survived"],
            "record kills survived": f["record kills survived"],
            "kill phases": dict(self.phases),
            "processes": f["processes"],
            "writes under load": f["writes under load"],
            "reader observations": f["reader observations"],
            "learners killed under load": f["learners killed under load"],
            "fuzz inputs tried": f["fuzz inputs tried"],
            "fuzz known-bug hits": {
                k[len("fuzz known-bug hits (") : -1]: v
                for k, v in f.items()
                if k.startswith("fuzz known-bug hits")
            },
            "retrieval anomalies (known bug)": len(self.anomalies),
            "lost": len(self.lost),
            "failures": len(self.failures),
        }
        print("\n== agentmem soak ==")
        for k, v in summary.items():
            print(f"{k:>32}: {v}")
        for line in (self.lost + self.failures)[:20]:
            print("  ! " + line[:500])
        if self.args.json:
            Path(self.args.json).write_text(
                json.dumps(
                    {
                        **summary,
                        "lost_detail": self.lost,
                        "failure_detail": self.failures,
                        "retrieval_anomalies": self.anomalies,
                    },
                    indent=2,
                )
            )
        if not self.args.keep and not self.failures and not self.lost and not self.args.workdir:
            shutil.rmtree(self.work, ignore_errors=True)
        return 1 if (self.failures or self.lost) else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=float, default=10.0, help="how long to run (default 10)")
    ap.add_argument("--seed", type=int, default=random.SystemRandom().randrange(10**6))
    ap.add_argument("--groups", type=int, default=30, help="learnable groups (default 30)")
    ap.add_argument(
        "--records",
        type=int,
        default=1500,
        help="trajectories in the file `agentmem record` is killed on",
    )
    ap.add_argument("--kills-per-round", type=int, default=8)
    ap.add_argument("--record-kills-per-round", type=int, default=4)
    ap.add_argument(
        "--fuzz-examples",
        type=int,
        default=300,
        help="Hypothesis examples per fuzz test per round (0: no fuzz)",
    )
    ap.add_argument(
        "--min-iters",
        type=int,
        default=20,
        help="least loop iterations of each worker per load round",
    )
    ap.add_argument("--workdir", help="keep the files here (default: a temporary folder)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    ap.add_argument("--json", help="also write the figures to this file")
    return Soak(ap.parse_args(argv)).run()


if __name__ == "__main__":
    sys.exit(main())
