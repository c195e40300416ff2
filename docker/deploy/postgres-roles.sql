-- Gridweave's databases on the compose PostgreSQL, each owned by a login role of its own
-- (gw_<database>: no superuser, no CREATEDB, no CREATEROLE), which its service logs in as;
-- no role but the superuser may open another's database or the maintenance ones.
-- Run by the compose service postgres-roles on every `docker compose up`, as the server's
-- superuser, before any Gridweave service starts:
--   psql -v ON_ERROR_STOP=1 -f postgres-roles.sql
-- Each role's password comes from POSTGRES_<DATABASE>_PASSWORD (deploy.sh and update.sh
-- generate the missing ones into deploy/.env). Idempotent: run again, it sets the rights and
-- passwords again; a database an earlier version made (owned by the superuser, and its
-- tables, sequences and functions too) is handed to its role with its rows.
-- The embedded PostgreSQL does the same (gridweave_runtime/postgres/_roles.py).
\set ON_ERROR_STOP on
SELECT current_database() AS admin_database \gset

\set database platform
\ir postgres-role.sql
\set database credits
\ir postgres-role.sql
\set database metering
\ir postgres-role.sql
\set database faucet
\ir postgres-role.sql
\set database chain
\ir postgres-role.sql
\set database kuberay
\ir postgres-role.sql

-- the maintenance databases and the superuser's own: the superuser's alone
REVOKE CONNECT, TEMPORARY ON DATABASE postgres, template1 FROM PUBLIC;
SELECT format('REVOKE CONNECT, TEMPORARY ON DATABASE %I FROM PUBLIC', :'admin_database')
\gexec
