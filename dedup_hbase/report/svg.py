"""Bar charts as plain SVG text (no script, no external reference), for the HTML report."""

from __future__ import annotations

from html import escape

WIDTH, HEIGHT, LEFT, BOTTOM, TOP = 640, 240, 56, 40, 24


def histogram(bars: list[tuple[str, int]], title: str, x_label: str) -> str:
    """An SVG bar chart: one bar per ``(label, count)``, heights in proportion to the counts
    (a linear axis from 0), each bar's count above it; ``title`` as the chart's <title>."""
    top = max((count for _, count in bars), default=0) or 1
    inner_w, inner_h = WIDTH - LEFT - 8, HEIGHT - BOTTOM - TOP
    slot = inner_w / max(len(bars), 1)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" viewBox="0 0 {WIDTH} {HEIGHT}" '
             f'width="{WIDTH}" height="{HEIGHT}" data-title="{escape(title)}">',
             f"<title>{escape(title)}</title>",
             f'<line x1="{LEFT}" y1="{TOP + inner_h}" x2="{WIDTH - 8}" y2="{TOP + inner_h}" stroke="#555"/>',
             f'<text x="{LEFT + inner_w / 2:.1f}" y="{HEIGHT - 4}" text-anchor="middle" class="axis">{escape(x_label)}</text>']
    for i, (label, count) in enumerate(bars):
        h = inner_h * count / top
        x = LEFT + i * slot + slot * 0.1
        y = TOP + inner_h - h
        parts.append(f'<rect class="bar" x="{x:.1f}" y="{y:.1f}" width="{slot * 0.8:.1f}" height="{h:.1f}" '
                     f'data-label="{escape(label)}" data-count="{count}"><title>{escape(label)}: {count:,}</title></rect>')
        parts.append(f'<text x="{x + slot * 0.4:.1f}" y="{y - 4:.1f}" text-anchor="middle" class="count">{count:,}</text>')
        parts.append(f'<text x="{x + slot * 0.4:.1f}" y="{TOP + inner_h + 16}" text-anchor="middle" class="label">'
                     f"{escape(label)}</text>")
    parts.append("</svg>")
    return "".join(parts)


def size_bins(sizes: dict[int, int]) -> list[tuple[str, int]]:
    """Groups of two or more by size (``sizes``: size -> groups): 2, 3, 4, 5, then 6-10,
    11-100, 101-1,000 ... up to the largest, each bin's groups counted."""
    bins: list[tuple[int, int]] = [(2, 2), (3, 3), (4, 4), (5, 5), (6, 10)]
    largest, decade = max(sizes, default=0), 10
    while decade < largest:
        bins.append((decade + 1, decade * 10))
        decade *= 10
    out = []
    for lo, hi in bins:
        label = f"{lo}" if lo == hi else f"{lo:,}-{hi:,}"
        out.append((label, sum(n for size, n in sizes.items() if lo <= size <= hi)))
    return out
