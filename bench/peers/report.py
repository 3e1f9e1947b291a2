"""Tables of `make bench-peers`: one per shape (median ms, spread over rounds, ratio to Tessel,
cold start, check) and a summary of the ratios over every shape. A row whose system failed, was
not installed or failed its check shows that text in place of its numbers."""
import statistics

from workers import OWN, SYSTEMS


def ratio_to_tessel(rows, system, tessel="tessel"):
    """Peer time / Tessel time (> 1 means Tessel is faster); None when either is missing.
    `tessel` names the Tessel row: "tessel", or "tessel_panels" (w prepared once)."""
    t, p = rows.get(tessel), rows.get(system)
    if not t or not p or t.get("median") is None or p.get("median") is None:
        return None
    return p["median"] / t["median"]


def best_peer(rows):
    timed = [(r["median"], s) for s, r in rows.items() if s not in OWN and r.get("median") is not None]
    return min(timed)[1] if timed else None


def spread(samples):
    """(slowest - fastest) / median of the per-round samples, in percent."""
    return 100 * (max(samples) - min(samples)) / statistics.median(samples) if len(samples) > 1 else 0.0


def check_text(row):
    checks = row.get("checks", [])
    if not checks:
        return "-"
    worst = max(c["error"] for c in checks)
    return ("ok " if all(c["ok"] for c in checks) else "FAILED ") + f"{worst:.1e}"


def print_shape(shape, rows, out):
    name, kind, m, k, n = shape
    note = "caches flushed before every call, in every system" if kind == "decode" else "warm caches"
    print(f"\n{name} ({kind}, {m}x{k}x{n}; {note})", file=out)
    print(f"  {'system':<28} {'median ms':>10} {'spread':>7} {'vs Tessel':>10} {'cold s':>8}  check (max err)", file=out)
    for system, row in rows.items():
        label = SYSTEMS[system][1]
        cold = f"{row['cold']:8.3f}" if row.get("cold") is not None else f"{'-':>8}"
        if row.get("median") is None:
            print(f"  {label:<28} {'-':>10} {'-':>7} {'-':>10} {cold}  {check_text(row)}  {row.get('status', '')}", file=out)
            continue
        r = ratio_to_tessel(rows, system)
        ratio = f"{r:9.2f}x" if r is not None else f"{'-':>10}"
        extra = f"  {row['status']}" if row.get("status") else ""
        print(f"  {label:<28} {row['median'] * 1e3:10.3f} {spread(row['samples']):6.0f}% {ratio} {cold}  {check_text(row)}{extra}",
              file=out)
    best = best_peer(rows)
    if best:
        r = ratio_to_tessel(rows, best)
        tail = f": {r:.2f}x Tessel's time" if r is not None else ""
        r2 = ratio_to_tessel(rows, best, "tessel_panels")
        tail += f"; {r2:.2f}x the time of Tessel with w prepared" if r2 is not None else ""
        print(f"  best peer: {SYSTEMS[best][1]}{tail}", file=out)


def print_summary(results, out):
    peers = [s for s in SYSTEMS if s != "tessel" and any(s in e["rows"] for e in results)]
    prepared = "tessel_panels" in peers
    print("\nSummary: peer ms / Tessel ms (> 1.00x means Tessel is faster; '-' = not timed, see the shape's table)", file=out)
    head = f"{'shape':<14} {'Tessel ms':>10}" + "".join(f" {s:>14}" for s in peers) + "  best peer"
    if prepared:
        head += " (best peer / Tessel with w prepared)"
    print(head, file=out)
    for entry in results:
        rows = entry["rows"]
        t = rows.get("tessel", {}).get("median")
        line = f"{entry['shape'][0]:<14} " + (f"{t * 1e3:10.3f}" if t else f"{'-':>10}")
        for s in peers:
            r = ratio_to_tessel(rows, s)
            line += f" {r:13.2f}x" if r is not None else f" {'-':>14}"
        best = best_peer(rows)
        line += f"  {SYSTEMS[best][1] if best else '-'}"
        r2 = ratio_to_tessel(rows, best, "tessel_panels") if best and prepared else None
        print(line + (f" ({r2:.2f}x)" if r2 is not None else ""), file=out)
