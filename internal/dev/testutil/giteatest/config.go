package giteatest

import (
	"bytes"
	"text/template"
)

// iniValues fill app.ini. Secrets (the database password, the secret key
// and the internal token) live only in app.ini, which only the run user
// can read, never on a command line.
type iniValues struct {
	RunUser, WorkPath, Port, StaticRoot string
	DBHost, DBPassword                  string
	SecretKey, InternalToken            string
	// SyncSchedule, when set, runs the sync_external_users task (LDAP
	// users and their group→team mapping) on this cron schedule; every
	// other cron task stays off.
	SyncSchedule string
	// OffTasks are the cron tasks turned off when cron runs for the sync.
	OffTasks []string
	// OAuth2Lifetime, in seconds, turns Gitea's OAuth2 provider on with
	// access tokens that live this long (0: the provider stays off).
	OAuth2Lifetime int
	JWTSecret      string
}

// otherCronTasks are Gitea 1.26's cron tasks besides sync_external_users
// and update_checker: off, so a test's Gitea runs only the sync it asked for.
var otherCronTasks = []string{"archive_cleanup", "cancel_abandoned_jobs", "check_repo_stats", "cleanup_actions",
	"cleanup_hook_task_table", "cleanup_packages", "delete_generated_repository_avatars", "delete_inactive_accounts",
	"delete_missing_repos", "delete_old_actions", "delete_old_system_notices", "delete_repo_archives",
	"deleted_branches_cleanup", "gc_lfs", "git_gc_repos", "rebuild_issue_indexer", "reinit_missing_repos",
	"repo_health_check", "resync_all_hooks", "resync_all_sshkeys", "resync_all_sshprincipals", "start_schedule_tasks",
	"stop_endless_tasks", "stop_zombie_tasks", "sync_repo_licenses", "update_migration_poster_id", "update_mirrors"}

// iniTemplate is the whole configuration: an installed instance on
// loopback that reaches nothing outside (offline, no mail, no update check,
// no federation, no avatars from elsewhere) and serves only what the tests
// use. Logs go to files under the work path.
var iniTemplate = template.Must(template.New("app.ini").Parse(`APP_NAME = ragcanary test
RUN_USER = {{.RunUser}}
RUN_MODE = prod
WORK_PATH = {{.WorkPath}}

[server]
PROTOCOL = http
HTTP_ADDR = 127.0.0.1
HTTP_PORT = {{.Port}}
DOMAIN = 127.0.0.1
ROOT_URL = http://127.0.0.1:{{.Port}}/
APP_DATA_PATH = {{.WorkPath}}/data
STATIC_ROOT_PATH = {{.StaticRoot}}
OFFLINE_MODE = true
DISABLE_SSH = true
START_SSH_SERVER = false
LFS_START_SERVER = false
ENABLE_PPROF = false
LANDING_PAGE = login

[database]
DB_TYPE = postgres
HOST = {{.DBHost}}
NAME = gitea
USER = gitea
PASSWD = {{.DBPassword}}
SSL_MODE = disable
MAX_OPEN_CONNS = 20
MAX_IDLE_CONNS = 5
LOG_SQL = false

[security]
INSTALL_LOCK = true
SECRET_KEY = {{.SecretKey}}
INTERNAL_TOKEN = {{.InternalToken}}
PASSWORD_COMPLEXITY = off

[service]
DISABLE_REGISTRATION = true
REQUIRE_SIGNIN_VIEW = true
ENABLE_NOTIFY_MAIL = false
DEFAULT_KEEP_EMAIL_PRIVATE = true
NO_REPLY_ADDRESS = noreply.ragcanary.test

[service.explore]
REQUIRE_SIGNIN_VIEW = true

[mailer]
ENABLED = false

[oauth2]
{{if .OAuth2Lifetime}}ENABLED = true
ACCESS_TOKEN_EXPIRATION_TIME = {{.OAuth2Lifetime}}
JWT_SIGNING_ALGORITHM = HS256
JWT_SECRET = {{.JWTSecret}}
{{else}}ENABLED = false
{{end}}
[federation]
ENABLED = false

[actions]
ENABLED = false

[packages]
ENABLED = false

[picture]
DISABLE_GRAVATAR = true
ENABLE_FEDERATED_AVATAR = false

[repository]
DISABLE_MIGRATIONS = true

[indexer]
ISSUE_INDEXER_TYPE = bleve
ISSUE_INDEXER_PATH = {{.WorkPath}}/data/indexers/issues.bleve
REPO_INDEXER_ENABLED = false

[session]
PROVIDER = memory

[cache]
ADAPTER = memory

[api]
ENABLE_SWAGGER = false

[metrics]
ENABLED = false

[cron]
ENABLED = {{if .SyncSchedule}}true{{else}}false{{end}}

[cron.update_checker]
ENABLED = false
{{if .SyncSchedule}}
[cron.sync_external_users]
ENABLED = true
RUN_AT_START = false
NO_SUCCESS_NOTICE = true
SCHEDULE = {{.SyncSchedule}}
UPDATE_EXISTING = true
{{range .OffTasks}}
[cron.{{.}}]
ENABLED = false
{{end}}{{end}}
[log]
MODE = file
LEVEL = Info
ROOT_PATH = {{.WorkPath}}/log
`))

func appINI(v iniValues) string {
	var b bytes.Buffer
	if err := iniTemplate.Execute(&b, v); err != nil {
		panic(err) // the template and its fields are fixed: a bug, not input
	}
	return b.String()
}
