-- One service's database and its role; included by postgres-roles.sql with :database set
-- (and :admin_database, the database to come back to).
\unset password
SELECT 'gw_' || :'database' AS role,
       'POSTGRES_' || upper(:'database') || '_PASSWORD' AS password_variable \gset
\getenv password :password_variable
\if :{?password}
\else
  SELECT set_config('gridweave.missing', format('%s is not set: the password of the role %s',
                                                :'password_variable', :'role'), false) AS missing
  \gset
  DO $missing$ BEGIN RAISE EXCEPTION '%', current_setting('gridweave.missing'); END $missing$;
\endif

-- the role: logs in with its password, and may do nothing else beyond its own database
SELECT format('CREATE ROLE %I', :'role')
WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = :'role')
\gexec
ALTER ROLE :"role" WITH LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS
    INHERIT PASSWORD :'password';

-- its database, owned by it (so its service migrates it), opened by no other role
SELECT format('CREATE DATABASE %I OWNER %I', :'database', :'role')
WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = :'database')
\gexec
ALTER DATABASE :"database" OWNER TO :"role";
REVOKE CONNECT, TEMPORARY ON DATABASE :"database" FROM PUBLIC;

-- what the superuser made in it (an earlier version migrated as the superuser) is the
-- role's: the same block as gridweave_runtime/postgres/_roles.py's HAND_OVER_OBJECTS
\connect :database
DO $hand_over$
DECLARE
    superuser oid := (SELECT oid FROM pg_roles WHERE rolname = current_user);
    new_owner name := (
        SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = current_database()
    );
    statement text;
BEGIN
    IF new_owner = current_user THEN
        RETURN;
    END IF;
    FOR statement IN
        SELECT format('ALTER SCHEMA %I OWNER TO %I', n.nspname, new_owner)
        FROM pg_namespace n
        WHERE n.nspowner = superuser
          AND n.nspname NOT LIKE 'pg\_%' AND n.nspname <> 'information_schema'
          AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_namespace'::regclass
                          AND d.objid = n.oid AND d.deptype = 'e')
    LOOP
        EXECUTE statement;
    END LOOP;
    FOR statement IN
        SELECT format('ALTER %s %s OWNER TO %I',
                      CASE c.relkind WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW'
                                     WHEN 'f' THEN 'FOREIGN TABLE' WHEN 'S' THEN 'SEQUENCE'
                                     ELSE 'TABLE' END,
                      c.oid::regclass, new_owner)
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE c.relowner = superuser AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S')
          AND n.nspname NOT LIKE 'pg\_%' AND n.nspname <> 'information_schema'
          AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_class'::regclass
                          AND d.objid = c.oid
                          AND (d.deptype = 'e' OR (c.relkind = 'S' AND d.deptype IN ('a', 'i'))))
    LOOP
        EXECUTE statement;
    END LOOP;
    FOR statement IN
        SELECT format('ALTER %s %s OWNER TO %I',
                      CASE t.typtype WHEN 'd' THEN 'DOMAIN' ELSE 'TYPE' END,
                      t.oid::regtype, new_owner)
        FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
        LEFT JOIN pg_class c ON c.oid = t.typrelid
        WHERE t.typowner = superuser
          AND (t.typtype IN ('e', 'd', 'r') OR (t.typtype = 'c' AND c.relkind = 'c'))
          AND n.nspname NOT LIKE 'pg\_%' AND n.nspname <> 'information_schema'
          AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_type'::regclass
                          AND d.objid = t.oid AND d.deptype = 'e')
    LOOP
        EXECUTE statement;
    END LOOP;
    FOR statement IN
        SELECT format('ALTER %s %s OWNER TO %I',
                      CASE p.prokind WHEN 'p' THEN 'PROCEDURE' WHEN 'a' THEN 'AGGREGATE'
                                     ELSE 'FUNCTION' END,
                      p.oid::regprocedure, new_owner)
        FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE p.proowner = superuser
          AND n.nspname NOT LIKE 'pg\_%' AND n.nspname <> 'information_schema'
          AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass
                          AND d.objid = p.oid AND d.deptype = 'e')
    LOOP
        EXECUTE statement;
    END LOOP;
END
$hand_over$;
\connect :admin_database
