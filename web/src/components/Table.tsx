/** A column of a table's head: its title, or a title with a key (a title that is no text) and
 * whether its figures align right. */
export type Column = string | { title: React.ReactNode; key?: string; right?: boolean };

/** A table's head row, a cell for each column. */
export function TableHead({ columns }: { columns: readonly Column[] }) {
  return (
    <thead>
      <tr className="border-b border-slate-300 text-left">
        {columns.map((column) =>
          typeof column === "string" ? (
            <th key={column} className="p-2">{column}</th>
          ) : (
            <th key={column.key ?? String(column.title)} className={column.right ? "p-2 text-right" : "p-2"}>{column.title}</th>
          ),
        )}
      </tr>
    </thead>
  );
}
