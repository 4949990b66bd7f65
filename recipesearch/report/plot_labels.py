"""Labels placed around a plot's points without overlapping each other, the markers or the axes' edge."""
from __future__ import annotations

import numpy as np

# Candidate label offsets around a point (points; horizontal and vertical alignment), tried in order.
_SPOTS = [(7, 3, "left", "bottom"), (7, -3, "left", "top"), (-7, 3, "right", "bottom"), (-7, -3, "right", "top"),
          (0, 8, "center", "bottom"), (0, -8, "center", "top"), (9, 13, "left", "bottom"), (9, -13, "left", "top")]


def _overlap(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> float:
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    return w * h if w > 0 and h > 0 else 0.0


def place_labels(
    ax, xy: np.ndarray, labels: list[str], fontsize: float, obstacles: np.ndarray, placed: list | None = None, **style
) -> list:
    """Annotate points greedily at the first spot that overlaps no placed label, marker or the axes edge.

    Text boxes are estimated (0.6 em per character) in display points from the axes' current transform,
    so call this after the axes position, scales and limits are final (a fixed layout, not constrained).
    Returns the occupied boxes: pass them as ``placed`` to a later call so its labels avoid these.
    """
    fig = ax.figure
    to_pt = 72.0 / fig.dpi
    pts = ax.transData.transform(xy) * to_pt
    obs = ax.transData.transform(obstacles) * to_pt if len(obstacles) else np.empty((0, 2))
    bbox = ax.get_window_extent().get_points() * to_pt
    frame = (bbox[0, 0], bbox[0, 1], bbox[1, 0], bbox[1, 1])
    placed = list(placed or []) + [(x - 4.5, y - 4.5, x + 4.5, y + 4.5) for x, y in obs]
    for (x, y), (xd, yd), text in zip(pts, xy, labels, strict=True):
        w, h = 0.6 * fontsize * len(text), 1.2 * fontsize
        best, best_cost = None, float("inf")
        for dx, dy, ha, va in _SPOTS:
            x0 = x + dx - (w if ha == "right" else w / 2 if ha == "center" else 0)
            y0 = y + dy - (h if va == "top" else 0)
            box = (x0, y0, x0 + w, y0 + h)
            outside = w * h - _overlap(box, frame)
            cost = sum(_overlap(box, p) for p in placed) + 2 * outside
            if cost < best_cost:
                best, best_cost = (dx, dy, ha, va, box), cost
            if cost == 0:
                break
        dx, dy, ha, va, box = best
        placed.append(box)
        ax.annotate(text, (xd, yd), xytext=(dx, dy), textcoords="offset points", ha=ha, va=va, fontsize=fontsize,
                    **style)
    return placed


def along_line(x: np.ndarray, y: np.ndarray, log: bool, n: int = 12) -> np.ndarray:
    """Points spaced along a polyline (x interpolated in log space on a log axis): obstacles for labels."""
    if len(x) < 2:
        return np.column_stack([x, y])
    u = np.linspace(0, 1, n)[:, None]
    fx = np.log(x) if log else x
    xs = (fx[:-1] + u * (fx[1:] - fx[:-1])).T.reshape(-1)
    ys = (y[:-1] + u * (y[1:] - y[:-1])).T.reshape(-1)
    return np.column_stack([np.exp(xs) if log else xs, ys])
