"""Secret redaction: take API keys, tokens, passwords and private keys out of trajectories.

Coding-agent trajectories carry credentials: ``export GITHUB_TOKEN=ghp_...`` in a
shell command, ``"password": "..."`` in a config file the agent read, a
``postgres://user:pass@host`` URL in a stack trace. Everything agentmem stores or
sends to a model goes through :func:`redact` (for text) or :func:`redact_value`
(for JSON-like parameters) first.

A secret is replaced by a placeholder that keeps its kind, such as
``[REDACTED:aws_access_key]``, so a lesson can still say "an AWS key was passed".
Where the secret sits in a ``key=value`` assignment, a header or a URL, only the
value goes: ``DB_PASSWORD=[REDACTED:password]``,
``Authorization: Bearer [REDACTED:bearer_token]``,
``postgres://app:[REDACTED:url_password]@db/app``.

The package: :mod:`.base` (placeholders, names, values, the rule type), :mod:`.rules`
(the shapes and contexts, and the order everything runs in), :mod:`.commands` (one
table entry per command that takes a password), :mod:`.documents` (file formats and
prose), :mod:`.engine` (the :class:`Redactor`, its prefilter, JSON values).

What is recognised (the ``kind`` in the placeholder):

* by shape, anywhere: ``private_key`` (PEM blocks, also cut-off ones, PuTTY key
  files), ``jwt``, ``aws_access_key`` (AKIA/ASIA/ABIA/ACCA ids), ``github_token``
  (ghp_, gho_, ghu_, ghs_, ghr_, github_pat_), ``gitlab_token`` (glpat- and
  friends), ``slack_token`` (xoxb-, xoxp-, ..., xapp-), ``slack_webhook``,
  ``discord_webhook``, ``stripe_key`` (sk_/rk_ live and test, whsec_),
  ``anthropic_api_key`` (sk-ant-), ``openai_api_key`` (sk-, sk-proj-, ...),
  ``google_api_key`` (AIza), ``google_client_secret`` (GOCSPX-),
  ``google_oauth_token`` (ya29.), ``npm_token`` (npm_), ``huggingface_token``
  (hf_), ``twilio_api_key`` (SK + 32 hex), ``sendgrid_api_key`` (SG.x.y),
  ``pypi_token`` (pypi-AgE...), ``docker_token`` (dckr_pat_), ``groq_api_key``
  (gsk_), ``xai_api_key`` (xai-), ``vault_token`` (hvs./hvb./hvr.),
  ``digitalocean_token`` (dop_v1_), ``grafana_token`` (glsa_), ``postman_api_key``
  (PMAK-), ``linear_api_key`` (lin_api_), ``shopify_token`` (shpat_ ...),
  ``databricks_token`` (dapi), ``azure_sas`` (``sig=`` in a URL query),
  ``age_secret_key``, ``telegram_bot_token``, ``atlassian_token`` (ATATT3),
  ``mailgun_api_key`` (key-), ``mailchimp_api_key`` (32 hex and -usN),
  ``doppler_token`` (dp.st. ...), ``contentful_token`` (CFPAT-), ``tailscale_key``,
  ``replicate_token`` (r8_), ``posthog_api_key`` (phc_), ``launchdarkly_key`` (sdk-);
  a token of one of these shapes with six of one character in a row or ``EXAMPLE`` in
  it is a placeholder and stays (``sk_test_xxxx...``, ``AKIAIOSFODNN7EXAMPLE``);
* by context: ``aws_secret_key`` (40 characters after ``aws_secret_access_key``,
  ``SecretAccessKey`` or ``AWS Secret Access Key [None]:``, and a bare one within
  two lines after its key id: CSV, tables), ``url_password``
  (``scheme://user:PASS@host``, also JSON-escaped ``https:\\/\\/``, Go's
  ``user:PASS@tcp(...)``, Oracle's ``user/PASS@db``; ``USER:PASSWORD`` and
  ``user:password`` placeholders stay), ``url_token`` (``https://TOKEN@host``, a Sentry
  DSN), ``bearer_token``/``basic_auth``/
  ``authorization`` (``Authorization:`` headers and ``Bearer ...``), ``cookie``
  (``Cookie:``/``Set-Cookie:`` headers in any case, ``curl -b``, Netscape cookie
  files), ``password`` on command lines (``curl -u user:PASS``, ``docker login
  -p``, ``sshpass -p``, ``mysql -pPASS``, ``redis-cli -a``, ``htpasswd -b file user
  PASS``, ``smbclient -U user%PASS``, ``openssl -passout pass:PASS``, ``keytool
  -storepass``, ``ldapsearch -w``, ``sqlcmd -P``, ``rabbitmqctl add_user u PASS``,
  ``vault login TOKEN``, ``net use ... /user:u PASS``, ``echo PASS | ...
  --password-stdin``, ``echo 'u:PASS' | chpasswd``: :data:`.commands.COMMANDS`),
  in files (``.pgpass`` lines, ``.netrc`` entries, every value of a Kubernetes
  Secret's ``data:``/``stringData:``, ``<password>`` elements and ``<add
  key="ApiSecret" value=...>``), in prose (``the password is hunter2``, ``Das
  Passwort ist ...``, ``le mot de passe est ...``, ``パスワードは ...``,
  ``数据库密码是 ...``, ``su密碼 ...``, ``admin/PASS`` after a word for credentials
  or an account: :data:`.documents.PROSE_WORDS`, some 50 words in 40 languages), in
  code (:mod:`.code`: ``HTTPBasicAuth("u", PASS)``, ``getConnection(url, "u", PASS)``,
  ``new PDO(dsn, "u", PASS)``, ``define('DB_PASSWORD', PASS)``, a Terraform variable's
  ``default``, a JSON Web Key's private members), and the value of any
  assignment or command-line flag whose name ends in a secret word:
  ``password``/``passwd``/``pwd``/``pw``/``pass``/``passphrase``/``passcode``/
  ``otp``/``psk`` (kind ``password``), ``token``/``jwt`` (``token``),
  ``api_key``/``apikey`` (``api_key``), ``private_key`` (``private_key``),
  ``secret``, ``client_secret``, ``access_key``, ``secret_key``,
  ``secret_key_base``, ``account_key``, ``credentials``, ``auth``, ``sessionid``
  ... (``secret``), written ``key=value``, ``key: value``, ``"key": "value"``,
  ``key => value``, ``key := value``, ``--key=value`` or ``--key value``;
* ``custom``: the patterns given to :class:`Redactor` as ``extra_patterns``.

What is *not* touched: git SHAs, UUIDs, checksums, base64 data, file paths,
URLs without credentials, public keys and certificates, and secret words used in
prose or in other names (``max_tokens: 128``, ``token_count=512``,
``secret_santa.py``, ``password: ""``, ``eos_token: "</s>"``, ``the password is
incorrect``). A high-entropy string is only redacted in a secret-named context.
In such a context some values are kept because code and configuration are full
of them: references (``$TOKEN``, ``${{ secrets.X }}``, ``{{ .Values.pw }}``,
``%s``, ``<your-key>``), placeholders (``your_password``, ``xxxx``, ``****``,
``sk-...``), paths, ``None``/``null``/booleans, calls and subscripts (``token =
get_token()``, ``os.environ["PW"]``), type annotations (``password: str``), the
name itself (``self.token = token``), names in code (``password = credentials``),
text for people (``"Enter your cpolar password"``, ``"Store password
securely?"``, ``"Authentication error: {error}"``, ``"验证 cpolar 凭据"``, a
sentence in kebab case), a UUID under a session-id name (agent transcripts log
``sessionId``), and, except under a password name, words and identifiers without
digits (``"input_token": "NextToken"``, ``token = TOKEN_FLOAT``) and short numbers
(``token: 42``). Well-known defaults are *not* kept: ``password: changeme`` may be
the password in use.

What is *not* protected (a safety net, not a guarantee):

* a secret with no known shape outside a secret-named context: a bare Twilio auth
  token or a password on a line of its own, a password typed at a prompt that the
  output echoes, a positional password of a command not in the table;
* values under names that do not say secret (``DB_URL_2=...`` without
  ``user:pass@``), and prose that a rule does not expect: a language or phrasing
  not in :data:`.documents.PROSE_WORDS`, a password without a digit or a symbol
  (``the password is swordfish``), prose escaped as ``\\uXXXX`` in JSON;
* values the rules above keep on purpose: a word-only (no digit) value under a
  token/secret/key name (``SECRET_KEY=changeme``), a password that reads as a
  name in code (``password = hunter``, with spaces around ``=``) or as a
  capitalised type after ``password:``, a value computed in code (``token =
  os.getenv("T", "dflt")`` keeps ``"dflt"``);
* parts of values: YAML block scalars (``password: |`` and the lines after,
  except in a Kubernetes Secret), the tail of a value after a comma, ``;`` or
  ``&`` when unquoted, or after a doubly escaped quote inside a quoted one;
* anything a custom shape would need: internal token formats, session ids in
  URLs, secrets split across lines or encoded (base64 of a whole ``.env`` file).

The sets in ``tests/data/redaction/`` (secrets in context and near-misses from real
transcripts and code, and sets written blind after the rules) and
``benchmarks/bench_redaction.py`` measure both ways; ``docs/security-redaction-rules.md``
has each set's first try beside today's figures, and what the rules change in real
sessions (``benchmarks/redaction_corpus.py``).

Speed: every rule starts with a literal (searched for fast by the regex engine,
and first with ``str.find``), can only start where a word starts, has nothing
that can fail after a long run of characters, and looks around a match only
within a bounded distance, so each is linear-time (``bench_redaction.py`` prints
the ratio of 2 MB to 256 KB of adversarial input: about 8); words are
matched case-insensitively by running lower-case rules on a lower-cased copy.
Before any rule runs, one prefilter scans the lower-cased text for every rule's
literal start and every secret-key word at once, each anchored on its rarest
character (:meth:`Redactor.needs`); text with no hint of a secret costs that one
scan, and a whole trajectory is scanned as one text when it is recorded. The scan
returns the anchor of every needle found, and a rule whose needle's anchor was not
found is skipped without a search of its own. A 10 MB build log takes well under a
second, and a text dense with secrets about a quarter of a second a megabyte. A long
output is cut to the library's cap before it is redacted (:mod:`agentmem.outputs`).
"""

from __future__ import annotations

from .base import PLACEHOLDER_PREFIX, InvalidPatternError, placeholder
from .engine import DEFAULT_REDACTOR, Redactor, is_secret_key, redact, redact_value
from .rules import KINDS

__all__ = [
    "DEFAULT_REDACTOR",
    "KINDS",
    "PLACEHOLDER_PREFIX",
    "InvalidPatternError",
    "Redactor",
    "is_secret_key",
    "placeholder",
    "redact",
    "redact_value",
]
