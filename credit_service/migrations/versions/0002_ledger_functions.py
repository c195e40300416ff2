"""The posting as a database function, and settlement by reference in one call.

``ledger_apply_posting`` is the one statement that changes a balance (conditional
``UPDATE ... RETURNING`` plus the ledger entry); ``services.ledger`` calls it for every
posting. ``settle_hold`` runs a whole settlement (claim the idempotency key, lock the hold,
check it, post, close the hold, store the answer) in one round trip; it writes nothing it
does not return, and on a refusal the caller rolls back, so the claim goes with it.

Revision ID: 0002_ledger_functions
Revises: 0001_ledger
"""

from __future__ import annotations

from alembic import op

revision = "0002_ledger_functions"
down_revision = "0001_ledger"
branch_labels = None
depends_on = None

# Locks the account row (an UPDATE of its balance takes FOR NO KEY UPDATE), re-checks
# the rules on its latest version, applies the change and appends the entry. No row back:
# refused (or no such account); the caller explains which.
_APPLY_POSTING = """
CREATE FUNCTION ledger_apply_posting(
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

# outcome: 'settled' (body = the answer, stored under the key), 'replayed' (body = the first
# answer), or an error code with its details in body (the caller rolls back, which releases
# the claim).
_SETTLE_HOLD = """
CREATE FUNCTION settle_hold(
    p_reference varchar, p_amount bigint, p_key varchar, p_fingerprint varchar,
    OUT outcome varchar, OUT body jsonb, OUT account_id bigint, OUT hold_amount bigint
) LANGUAGE plpgsql AS $$
DECLARE
    v_first operations%ROWTYPE;
    v_hold holds%ROWTYPE;
    v_account record;
    v_status varchar;
BEGIN
    INSERT INTO operations (key, kind, fingerprint)
    VALUES (p_key, 'settlement', p_fingerprint)
    ON CONFLICT (key) DO NOTHING;
    IF NOT FOUND THEN
        -- ON CONFLICT waited for the key's writer to commit; this statement sees its row
        SELECT * INTO v_first FROM operations AS o WHERE o.key = p_key;
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
    UPDATE operations SET response = body WHERE key = p_key;
    outcome := 'settled';
END
$$
"""


def upgrade() -> None:
    """Create ledger_apply_posting and settle_hold."""
    op.execute(_APPLY_POSTING)
    op.execute(_SETTLE_HOLD)


def downgrade() -> None:
    """Drop both functions (the tables stay)."""
    op.execute("DROP FUNCTION settle_hold(varchar, bigint, varchar, varchar)")
    op.execute(
        "DROP FUNCTION ledger_apply_posting(bigint, bigint, bigint, varchar, varchar, bigint, "
        "bigint)"
    )
