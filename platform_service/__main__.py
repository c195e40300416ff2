"""``python -m platform_service``: serve the platform (port 8100), or bootstrap an admin.

- no argument (or ``serve``): run the platform until interrupted;
- ``create-admin [--email EMAIL] [--key-name NAME]``: migrate the database, create an admin
  user (or, when ``--email`` names one already, reuse it) and print a new API key of it on
  stdout, alone on its line, for ``make up`` to show. Nothing else is printed on stdout;
- ``publish-token --repository gridweave/NAME``: print a registry token (pull and push) for
  a repository of the public namespace, signed with the platform's key, for ``gridweave up``
  and ``deploy.sh`` to push Gridweave's own images (the default job image) with.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from gridweave_runtime.app import open_service_database, serve
from platform_service.app import MIGRATIONS_DIR, create_app
from platform_service.services.bootstrap import create_admin_key
from platform_service.services.keys import api_key_secret
from platform_service.services.registry_tokens import publish_token
from platform_service.settings import DATABASE_NAME, PlatformSettings


def _arguments(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="gridweave-platform", description=__doc__)
    commands = parser.add_subparsers(dest="command")
    commands.add_parser("serve", help="serve the platform API (the default)")
    admin = commands.add_parser("create-admin", help="print a new API key of an admin user")
    admin.add_argument("--email", default=None, help="the admin's email (reused if it exists)")
    admin.add_argument("--key-name", default="bootstrap", help="the key's label")
    publish = commands.add_parser(
        "publish-token", help="print a push token for a repository of the public namespace"
    )
    publish.add_argument("--repository", required=True, help="e.g. gridweave/python")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    """Serve the platform, or run one of its commands."""
    arguments = _arguments(sys.argv[1:] if argv is None else argv)
    settings = PlatformSettings()
    if arguments.command == "create-admin":
        database = open_service_database(
            settings, database=DATABASE_NAME, migrations_dir=MIGRATIONS_DIR
        )
        try:
            with database.session() as session:
                key = create_admin_key(
                    session,
                    hmac_key=api_key_secret(settings),
                    email=arguments.email,
                    key_name=arguments.key_name,
                )
        finally:
            database.dispose()
        print(key.api_key)
        return
    if arguments.command == "publish-token":
        try:
            token = publish_token(settings, arguments.repository)
        except ValueError as refused:
            sys.exit(f"publish-token: {refused}")
        print(token)
        return
    serve(create_app(settings), settings)


if __name__ == "__main__":
    main()
