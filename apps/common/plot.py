"""Draws the PNG figures an ata app describes in a JSON file.

Usage: python3 plot.py SPEC.json   (the apps run it as python3 -c SCRIPT SPEC.json)
SPEC: {"figures": [{"file": "out.png", "title": "...", "xlabel": "...", "ylabel": "...",
                    "xlog": false, "ylog": false,
                    "series": [{"label": "ata", "x": [...], "y": [...]}],
                    (a series with "reference": true is dotted, in the colour of the one before)
                    "bars": [[row, start, length, "group"], ...]}]}
A figure with bars is a Gantt chart: a row per bar row (top down), coloured by group.
Each PNG is written to a temporary file and renamed, so a failed run leaves no half-written one.
"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

STYLES = {
    "gta": ("tab:red", "-"),
    "ofta": ("black", "--"),
    "eofta": ("black", ":"),
    "uta": ("tab:gray", ":"),
    "ata": ("tab:blue", "-"),
    "ata-e": ("tab:green", "-"),
    "ata-auto": ("tab:purple", "-"),
    "pull": ("tab:orange", "-."),
    "frontier": ("darkgreen", "-"),
    "ata-auto:late": ("tab:cyan", "-"),
    "ata-auto:off": ("tab:pink", ":"),
}
# Strategies without a style of their own (race:M, ...): these, in the order they come, none
# of them a colour above, so every line of a figure is told apart.
EXTRA_STYLES = [
    ("tab:brown", "--"),
    ("tab:olive", "-."),
    ("teal", (0, (5, 1))),
    ("goldenrod", (0, (3, 1, 1, 1))),
    ("navy", "--"),
    ("darkred", "-."),
    ("darkkhaki", (0, (1, 1))),
    ("slateblue", (0, (5, 2, 1, 2))),
]


BAR_COLOURS = {"accepted": "tab:blue", "stopped": "tab:orange", "restarted": "tab:red",
               "discarded": "tab:orange"}


def draw_bars(ax, bars):
    groups = {}
    for row, start, length, group in bars:
        groups.setdefault(group, []).append((row, start, length))
    extra = 0
    for group, items in groups.items():
        if group in BAR_COLOURS:
            color = BAR_COLOURS[group]
        else:
            color = EXTRA_STYLES[extra % len(EXTRA_STYLES)][0]
            extra += 1
        ax.barh([r for r, _, _ in items], [l for _, _, l in items],
                left=[s for _, s, _ in items], height=0.8, color=color, label=group,
                edgecolor="white", linewidth=0.3)
    ax.invert_yaxis()


def draw(figure):
    fig, ax = plt.subplots(figsize=(6.4, 4.4), dpi=120)
    if figure.get("bars"):
        draw_bars(ax, figure["bars"])
    extra = 0
    color = "black"
    for series in figure["series"]:
        if series.get("reference"):
            line = ":"  # the previous series' colour
        elif series["label"] in STYLES:
            color, line = STYLES[series["label"]]
        else:
            color, line = EXTRA_STYLES[extra % len(EXTRA_STYLES)]
            extra += 1
        if len(series["x"]) == 1:  # a point (a line of one point would not show)
            hidden = series["label"].startswith("_")  # matplotlib leaves it out of the legend
            ax.plot(series["x"], series["y"], label=series["label"], color="silver" if hidden else color,
                    marker="." if hidden else "o", linestyle="none")
        else:
            ax.plot(series["x"], series["y"], label=series["label"], color=color, linestyle=line,
                    linewidth=1.6)
    if figure.get("xlog"):
        ax.set_xscale("log")
    if figure.get("ylog"):
        ax.set_yscale("log")
    ax.set_title(figure.get("title", ""), fontsize=10)
    ax.set_xlabel(figure.get("xlabel", ""))
    ax.set_ylabel(figure.get("ylabel", ""))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    folder, name = os.path.split(figure["file"])
    temporary = os.path.join(folder, ".%s.tmp-%d" % (name, os.getpid()))
    try:
        fig.savefig(temporary, format="png")
        os.replace(temporary, figure["file"])
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)
    plt.close(fig)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: plot.py SPEC.json")
    with open(sys.argv[1], encoding="utf-8") as f:
        spec = json.load(f)
    for figure in spec["figures"]:
        draw(figure)


if __name__ == "__main__":
    main()
