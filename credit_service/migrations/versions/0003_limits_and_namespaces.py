"""A maximum balance, idempotency keys per caller and operation, settlements naming the payer.

- ``accounts.balance <= 10^18`` (``MAX_BALANCE``): ``ledger_apply_posting`` refuses a posting
  past it (no row back, like any refusal), so a mint can no longer overflow BIGINT (a 500).
- ``operations`` is keyed on ``(caller, kind, key)``: a key claimed by one calling service
  (its ``X-Gridweave-Role``) for one operation can never be claimed by another. Rows written
  before this revision keep ``caller = ''`` (so does every settlement, whose key is derived
  from its reference whoever calls): their replays still find them only from a caller
  without a role.
- ``settle_hold`` takes the user the hold must belong to and refuses another
  (``hold_owner_mismatch``), so a usage record can only bill its own owner.

Revision ID: 0003_limits_and_namespaces
Revises: 0002_ledger_functions
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import sqlalchemy as sa
from alembic import op

revision = "0003_limits_and_namespaces"
down_revision = "0002_ledger_functions"
branch_labels = None
depends_on = None

# gridweave_clients.credit.models.MAX_BALANCE (a test checks they agree)
_MAX_BALANCE = 10**18

_APPLY_POSTING = f"""
CREATE OR REPLACE FUNCTION ledger_apply_posting(
    p_account_id bigint, p_amount bigint, p_held bigint, p_kind varchar,
    p_operation_key varchar, p_hold_id bigint, p_counterparty_account_id bigint
) RETURNS TABLE (id bigint, user_id varchar, balance bigint, held bigint)
LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY
    WITH moved AS (
        UPDATE accounts AS a
           SET balance = a.balance + p_amount, held = a.held + p_held
         WHERE a.id = p_account_id
           AND a.balance + p_amount >= 0
           AND a.balance + p_amount <= {_MAX_BALANCE}
           AND a.held + p_held >= 0
           AND a.held + p_held <= a.balance + p_amount
        RETURNING a.id, a.user_id, a.balance, a.held
    ), entry AS (
        INSERT INTO ledger_entries
            (account_id, amount, balance_after, kind, operation_key, hold_id,
             counterparty_account_id)
        SELECT m.id, p_amount, m.balance, p_kind, p_operation_key, p_hold_id,
               p_counterparty_account_id
          FROM moved AS m
         WHERE p_amount <> 0
    )
    SELECT m.id, m.user_id, m.balance, m.held FROM moved AS m;
END
$$
"""

# As in 0002, plus: the hold's account must belong to p_user_id, checked before anything
# moves; the settlement's key stays in the caller-less namespace (derived from the reference,
# whoever calls).
_SETTLE_HOLD = """
CREATE FUNCTION settle_hold(
    p_reference varchar, p_user_id varchar, p_amount bigint, p_key varchar,
    p_fingerprint varchar,
    OUT outcome varchar, OUT body jsonb, OUT account_id bigint, OUT hold_amount bigint
) LANGUAGE plpgsql AS $$
DECLARE
    v_first operations%ROWTYPE;
    v_hold holds%ROWTYPE;
    v_owner varchar;
    v_account record;
    v_status varchar;
BEGIN
    INSERT INTO operations (caller, kind, key, fingerprint)
    VALUES ('', 'settlement', p_key, p_fingerprint)
    ON CONFLICT (caller, kind, key) DO NOTHING;
    IF NOT FOUND THEN
        -- ON CONFLICT waited for the key's writer to commit; this statement sees its row
        SELECT * INTO v_first FROM operations AS o
         WHERE o.caller = '' AND o.kind = 'settlement' AND o.key = p_key;
        IF v_first.fingerprint <> p_fingerprint OR v_first.response IS NULL THEN
            outcome := 'idempotency_conflict';
            body := jsonb_build_object('idempotency_key', p_key, 'first_kind', v_first.kind);
        ELSE
            outcome := 'replayed';
            body := v_first.response;
        END IF;
        RETURN;
    END IF;

    SELECT * INTO v_hold FROM holds AS h WHERE h.reference = p_reference FOR UPDATE;
    IF NOT FOUND THEN
        outcome := 'hold_not_found';
        body := jsonb_build_object('reference', p_reference);
        RETURN;
    END IF;
    SELECT a.user_id INTO v_owner FROM accounts AS a WHERE a.id = v_hold.account_id;
    IF v_owner <> p_user_id THEN
        outcome := 'hold_owner_mismatch';
        body := jsonb_build_object(
            'reference', p_reference, 'hold_user_id', v_owner, 'user_id', p_user_id);
        RETURN;
    END IF;
    IF v_hold.status <> 'open' THEN
        outcome := 'hold_not_open';
        body := jsonb_build_object('hold_id', v_hold.id, 'status', v_hold.status);
        RETURN;
    END IF;
    IF p_amount > v_hold.amount THEN
        outcome := 'capture_exceeds_hold';
        body := jsonb_build_object(
            'hold_id', v_hold.id, 'hold_amount', v_hold.amount, 'requested', p_amount);
        RETURN;
    END IF;

    account_id := v_hold.account_id;
    hold_amount := v_hold.amount;
    SELECT * INTO v_account FROM ledger_apply_posting(
        v_hold.account_id, -p_amount, -v_hold.amount, 'settlement', p_key, v_hold.id, NULL);
    IF NOT FOUND THEN
        -- cannot happen while the invariants hold (the hold's money is part of held)
        outcome := 'insufficient_funds';
        SELECT jsonb_build_object('user_id', a.user_id, 'balance', a.balance, 'held', a.held,
                                  'available', a.balance - a.held, 'needed', p_amount)
          INTO body FROM accounts AS a WHERE a.id = v_hold.account_id;
        RETURN;
    END IF;

    v_status := CASE WHEN p_amount > 0 THEN 'captured' ELSE 'released' END;
    UPDATE holds SET captured = p_amount, status = v_status, closed_at = now()
     WHERE id = v_hold.id;
    -- the same body HoldResponse serializes to (a test compares them)
    body := jsonb_build_object(
        'hold_id', v_hold.id,
        'user_id', v_account.user_id,
        'amount', v_hold.amount,
        'captured', p_amount,
        'released', v_hold.amount - p_amount,
        'status', v_status,
        'reference', v_hold.reference,
        'account', jsonb_build_object(
            'user_id', v_account.user_id,
            'balance', v_account.balance,
            'held', v_account.held,
            'available', v_account.balance - v_account.held));
    UPDATE operations SET response = body
     WHERE caller = '' AND kind = 'settlement' AND key = p_key;
    outcome := 'settled';
END
$$
"""


def upgrade() -> None:
    """Cap balances, key operations per caller and kind, settle naming the payer."""
    op.create_check_constraint("balance_within_maximum", "accounts", f"balance <= {_MAX_BALANCE}")
    op.add_column(
        "operations", sa.Column("caller", sa.String(64), nullable=False, server_default="")
    )
    op.drop_constraint("operations_pkey", "operations", type_="primary")
    op.create_primary_key("operations_pkey", "operations", ["caller", "kind", "key"])
    op.execute(_APPLY_POSTING)
    op.execute("DROP FUNCTION settle_hold(varchar, bigint, varchar, varchar)")
    op.execute(_SETTLE_HOLD)


def downgrade() -> None:
    """Back to 0002 (fails if two callers claimed the same key meanwhile)."""
    op.execute("DROP FUNCTION settle_hold(varchar, varchar, bigint, varchar, varchar)")
    op.drop_constraint("operations_pkey", "operations", type_="primary")
    op.create_primary_key("operations_pkey", "operations", ["key"])
    op.drop_column("operations", "caller")
    op.drop_constraint("balance_within_maximum", "accounts", type_="check")
    # 0002's functions back (ledger_apply_posting without the maximum, settle_hold by key)
    path = Path(__file__).with_name("0002_ledger_functions.py")
    spec = importlib.util.spec_from_file_location("credit_migration_0002", path)
    assert spec is not None and spec.loader is not None
    previous = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(previous)
    op.execute(previous._APPLY_POSTING.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION"))
    op.execute(previous._SETTLE_HOLD)
