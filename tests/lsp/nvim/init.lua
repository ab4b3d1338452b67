-- A minimal Neovim configuration for tests/lsp/test_neovim.py: the built-in LSP client starts
-- `python -m cute_bind lsp` for Python buffers, the test's command waits for the diagnostics,
-- asks for the code actions and a hover, writes everything as JSON and quits.
-- Neovim 0.8+ has vim.lsp.start; Debian 12's 0.7 has vim.lsp.start_client + buf_attach_client.
local started = vim.loop.hrtime()  -- the editor's start (this file runs first): the first-diagnostics clock
local opened = nil                  -- when the Python buffer's FileType fired: the file opened, the server started
local python = os.getenv("CUTE_BIND_PYTHON") or "python3"
local root = os.getenv("CUTE_BIND_ROOT") or vim.fn.getcwd()

vim.api.nvim_create_autocmd("FileType", {
  pattern = "python",
  callback = function(args)
    opened = opened or vim.loop.hrtime()
    -- the documented configuration (docs/editors.md): no client-side debounce on top of the server's
    local config = {
      name = "cute-bind", cmd = { python, "-m", "cute_bind", "lsp" }, root_dir = root,
      flags = { debounce_text_changes = 0 },
    }
    if vim.lsp.start then
      vim.lsp.start(config)
    else
      local id = vim.lsp.start_client(config)
      vim.lsp.buf_attach_client(args.buf, id)
    end
  end,
})

-- Called with -c after the file is loaded: report to the file named by $CUTE_BIND_NVIM_OUT.
function CuteBindReport()
  local out = assert(os.getenv("CUTE_BIND_NVIM_OUT"), "CUTE_BIND_NVIM_OUT is not set")
  local report = { nvim = vim.version(), diagnostics = {}, actions = {}, hover = nil, error = nil }
  local ok = vim.wait(60000, function() return #vim.diagnostic.get(0) > 0 end, 5)
  if not ok then
    report.error = "no diagnostics within 60 s"
  end
  local now = vim.loop.hrtime()
  report.first_diagnostics_s = { from_start = (now - started) / 1e9, from_open = (now - (opened or started)) / 1e9 }
  local clients = vim.lsp.get_active_clients()
  report.debounce_text_changes = clients[1] and (clients[1].config.flags or {}).debounce_text_changes
  for _, d in ipairs(vim.diagnostic.get(0)) do
    local lsp = (d.user_data or {}).lsp or {}
    table.insert(report.diagnostics, {
      lnum = d.lnum, col = d.col, message = d.message, source = d.source,
      code = d.code or lsp.code,
      href = (lsp.codeDescription or {}).href,
    })
  end
  -- the quick fixes of each diagnostic, as the client's own request (what :lua vim.lsp.buf.code_action() sends)
  for _, d in ipairs(vim.diagnostic.get(0)) do
    -- the diagnostic in the protocol's form (0.7 keeps only some LSP fields in user_data); the
    -- fixture is ASCII, so byte columns are UTF-16 units
    local code = d.code or ((d.user_data or {}).lsp or {}).code
    local range = { start = { line = d.lnum, character = d.col }, ["end"] = { line = d.end_lnum, character = d.end_col } }
    local lsp = { range = range, message = d.message, severity = d.severity, source = d.source, code = code }
    local params = {
      textDocument = vim.lsp.util.make_text_document_params(),
      range = range,
      context = { diagnostics = { lsp } },
    }
    local replies = vim.lsp.buf_request_sync(0, "textDocument/codeAction", params, 10000) or {}
    for _, reply in pairs(replies) do
      for _, action in ipairs(reply.result or {}) do
        table.insert(report.actions, { code = lsp.code, title = action.title, kind = action.kind, has_edit = action.edit ~= nil })
      end
    end
  end
  -- hover on the first diagnostic's parameter
  local first = vim.diagnostic.get(0)[1]
  if first then
    local params = { textDocument = vim.lsp.util.make_text_document_params(), position = { line = first.lnum, character = first.col } }
    local replies = vim.lsp.buf_request_sync(0, "textDocument/hover", params, 10000) or {}
    for _, reply in pairs(replies) do
      if reply.result then report.hover = reply.result.contents.value end
    end
  end
  local f = assert(io.open(out, "w"))
  f:write(vim.fn.json_encode(report))
  f:close()
  vim.cmd("qall!")
end
