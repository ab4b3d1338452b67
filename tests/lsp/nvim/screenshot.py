"""The screenshot of docs/editors.md: real Neovim, real ``cute-bind lsp``, its screen rendered to PNG.

Neovim runs embedded (``nvim --embed``, driven with pynvim) with the same
init.lua as tests/lsp/test_neovim.py, and this script attaches to it as its
UI (``nvim_ui_attach`` with ``ext_linegrid``): Neovim sends the screen as a
grid of cells with highlight attributes, exactly what a terminal or GUI
front end draws. The script keeps that grid, and at two moments draws it
cell by cell with Pillow in DejaVu Sans Mono:

1. the diagnostics have arrived (signs, underlines, virtual text);
2. ``vim.lsp.buf.code_action()`` on the CB104 line is showing its menu
   of quick fixes (Neovim 0.7 asks with ``inputlist``),

and after choosing the first fix, a third frame with the file fixed.

    pip install pynvim pillow && python tests/lsp/nvim/screenshot.py docs/img/editor-neovim.png

Nothing is drawn by hand: every character and colour is the one Neovim sent.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pynvim
from PIL import Image, ImageDraw, ImageFont

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"
COLS, ROWS = 104, 24

SOURCE = '''\
from typing import Optional

import cutlass
import cutlass.cute as cute

import cute_bind


@cute_bind.kernel
def scale(
    out: cute_bind.Pointer[cutlass.Float32],
    alpha: cutlass.Float8E4M3FN,
    sizes: tuple[int, tuple[int, int]],
    mode: Optional[str],
    n: cutlass.Int32,
):
    pass
'''


class Grid:
    """Neovim's screen, kept from its ``redraw`` events (the ext_linegrid protocol)."""

    def __init__(self, cols: int, rows: int) -> None:
        self.cols, self.rows = cols, rows
        self.cells = [[(" ", 0)] * cols for _ in range(rows)]
        self.attrs: dict[int, dict[str, Any]] = {0: {}}
        self.fg, self.bg, self.sp = 0xD0D0D0, 0x1C1C1C, 0xFF0000

    def apply(self, batch: list[Any]) -> None:
        for event in batch:
            name, *calls = event
            for args in calls:
                getattr(self, f"_{name}", lambda *a: None)(*args)

    def _grid_resize(self, grid: int, cols: int, rows: int) -> None:
        self.cols, self.rows = cols, rows
        self.cells = [[(" ", 0)] * cols for _ in range(rows)]

    def _default_colors_set(self, fg: int, bg: int, sp: int, *_: Any) -> None:
        self.fg = fg if fg >= 0 else self.fg
        self.bg = bg if bg >= 0 else self.bg
        self.sp = sp if sp >= 0 else self.sp

    def _hl_attr_define(self, hl: int, rgb: dict[str, Any], *_: Any) -> None:
        self.attrs[hl] = rgb

    def _grid_clear(self, grid: int) -> None:
        self.cells = [[(" ", 0)] * self.cols for _ in range(self.rows)]

    def _grid_line(self, grid: int, row: int, col: int, cells: list[Any], *_: Any) -> None:
        hl = 0
        for cell in cells:
            text = cell[0]
            if len(cell) > 1:
                hl = cell[1]
            repeat = cell[2] if len(cell) > 2 else 1
            for _ in range(repeat):
                if col < self.cols:
                    self.cells[row][col] = (text, hl)
                col += 1

    def _grid_scroll(self, grid: int, top: int, bot: int, left: int, right: int, rows: int, cols: int) -> None:
        src = [list(r) for r in self.cells]
        for r in range(top, bot):
            s = r + rows
            if top <= s < bot:
                self.cells[r][left:right] = src[s][left:right]

    def png(self, path: Path, title: str) -> None:
        font = ImageFont.truetype(FONT, 15)
        bold = ImageFont.truetype(FONT.replace(".ttf", "-Bold.ttf"), 15)
        cw = round(font.getlength("M"))
        ch = 19
        pad, head = 12, 30
        img = Image.new("RGB", (self.cols * cw + 2 * pad, self.rows * ch + 2 * pad + head), "#2b2b2b")
        draw = ImageDraw.Draw(img)
        draw.text((pad, 8), title, font=font, fill="#bbbbbb")
        rgb = lambda c: ((c >> 16) & 255, (c >> 8) & 255, c & 255)  # noqa: E731
        for r, row in enumerate(self.cells):
            for c, (text, hl) in enumerate(row):
                a = self.attrs.get(hl, {})
                fg, bg = a.get("foreground", self.fg), a.get("background", self.bg)
                if a.get("reverse"):
                    fg, bg = bg, fg
                x, y = pad + c * cw, pad + head + r * ch
                draw.rectangle([x, y, x + cw, y + ch], fill=rgb(bg))
                if text.strip():
                    draw.text((x, y + 1), text, font=bold if a.get("bold") else font, fill=rgb(fg))
                if a.get("undercurl") or a.get("underline"):
                    sp = rgb(a.get("special", fg))
                    if a.get("undercurl"):
                        for dx in range(0, cw, 4):
                            draw.line([x + dx, y + ch - 2, x + dx + 2, y + ch - 4, x + dx + 4, y + ch - 2], fill=sp)
                    else:
                        draw.line([x, y + ch - 2, x + cw, y + ch - 2], fill=sp)
        img.save(path)


def main(out: str) -> int:
    work = Path(tempfile.mkdtemp(prefix="cute-bind-shot-"))
    source = work / "kernels.py"
    source.write_text(SOURCE)
    # tests/child.py's pythonpath(), inlined: this script runs directly (python tests/lsp/nvim/screenshot.py), where
    # the tests package is not importable. The checkout first, then the PYTHONPATH already set (a machine may put
    # the CuTe DSL there, outside the venv)
    pythonpath = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "CUTE_BIND_PYTHON": sys.executable, "CUTE_BIND_ROOT": str(work), "PYTHONPATH": pythonpath}
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"):
        env[name] = str(work / name.lower())
    os.environ.update(env)  # pynvim starts the child with this process's environment
    nvim = pynvim.attach("child", argv=["nvim", "--embed", "-n", "-i", "NONE", "-u", str(HERE / "init.lua"), str(source)])
    grid = Grid(COLS, ROWS)
    session = nvim._session

    def drain() -> None:
        while session._pending_messages:
            msg = session._pending_messages.popleft()
            if msg[0] == "notification" and msg[1] == "redraw":
                grid.apply(msg[2])

    def settle(seconds: float = 0.5) -> None:
        end = time.time() + seconds
        while time.time() < end:
            nvim.request("nvim_get_mode")  # a round trip (a "fast" call, answered inside inputlist too)
            drain()
            time.sleep(0.05)

    nvim.ui_attach(COLS, ROWS, rgb=True, ext_linegrid=True)
    nvim.command("set termguicolors number signcolumn=yes background=dark laststatus=2 cmdheight=6")
    nvim.command("highlight Normal guibg=#1c1c1c guifg=#d0d0d0")
    # virtual text with the code in front, as docs/editors.md configures it
    nvim.exec_lua(
        "vim.diagnostic.config({ virtual_text = { format = function(d) "
        "local code = d.code or ((d.user_data or {}).lsp or {}).code "
        "return code and ('[' .. code .. '] ' .. d.message) or d.message end } })"
    )
    nvim.exec_lua("vim.wait(60000, function() return #vim.diagnostic.get(0) > 0 end, 20)")
    nvim.command("call cursor(12, 5)")  # on 'alpha' (CB104)
    settle(1.0)
    shots = []
    path1 = Path(out)
    grid.png(path1, "Neovim 0.7 + cute-bind lsp: diagnostics as published (signs, undercurl, virtual text)")
    shots.append(path1)
    # the code-action menu: Neovim 0.7's vim.ui.select asks with inputlist(), which waits for input,
    # so the command is sent without waiting for its end
    nvim.command("lua vim.lsp.buf.code_action()", async_=True)
    settle(2.0)
    path2 = path1.with_name(path1.stem + "-quickfix" + path1.suffix)
    grid.png(path2, "vim.lsp.buf.code_action() on the 'alpha' line: the quick fixes the server offers")
    shots.append(path2)
    nvim.input("1<CR>")  # the first: CB104's mechanical fix
    settle(2.0)
    nvim.command("echo ''")
    settle(1.0)
    path3 = path1.with_name(path1.stem + "-fixed" + path1.suffix)
    grid.png(path3, "after choosing 1: 'alpha: cutlass.Float32', and its diagnostic is gone")
    shots.append(path3)
    nvim.command("qall!", async_=True)
    for p in shots:
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "docs" / "img" / "editor-neovim.png")))
