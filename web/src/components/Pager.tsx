import { useState } from "react";

/** Where a list paged by the API's cursors is: the cursor of each page after the first, a stack
 * (Next walks forward with the cursor the API answered; Previous goes back one page). */
export type CursorPages<Cursor> = {
  /** The cursor of the page shown; undefined on the first page. */
  cursor: Cursor | undefined;
  /** How many pages come before the one shown. */
  before: number;
  back: () => void;
  forward: (next: Cursor) => void;
  /** Back to the first page (the filters changed). */
  reset: () => void;
};

export function useCursorPages<Cursor>(): CursorPages<Cursor> {
  const [cursors, setCursors] = useState<Cursor[]>([]);
  return {
    cursor: cursors.at(-1),
    before: cursors.length,
    back: () => setCursors((stack) => stack.slice(0, -1)),
    forward: (next) => setCursors((stack) => [...stack, next]),
    reset: () => setCursors([]),
  };
}

const BUTTON = "rounded border border-slate-400 px-3 py-1 disabled:opacity-40";

/** Previous and Next (or the words given) for a list paged by cursors; ``next`` is the API's
 * cursor of the page after the one shown (none on the last page); ``children`` stand beside. */
export function Pager<Cursor>({
  pages,
  next,
  words = ["Previous", "Next"],
  className = "",
  children,
}: {
  pages: CursorPages<Cursor>;
  next: Cursor | null | undefined;
  words?: readonly [string, string];
  className?: string;
  children?: React.ReactNode;
}) {
  return (
    <div className={`flex items-center gap-2 ${className}`}>
      <button type="button" disabled={pages.before === 0} onClick={pages.back} className={BUTTON}>
        {words[0]}
      </button>
      <button type="button" disabled={next == null} onClick={() => next != null && pages.forward(next)} className={BUTTON}>
        {words[1]}
      </button>
      {children}
    </div>
  );
}
