-- proximity's language server in Neovim's built-in client, for any file in a git worktree.
-- Load it from init.lua (`dofile("/path/to/proximity.lua")`) or copy it there; see
-- docs/editors.md. Neovim 0.8+ uses vim.lsp.start; 0.7 the older start_client.
local M = {}

M.cmd = { "proximity", "lsp" }

local function root_of(path)
  local found = vim.fn.finddir(".git", vim.fn.fnamemodify(path, ":p:h") .. ";")
  if found == "" then
    found = vim.fn.findfile(".git", vim.fn.fnamemodify(path, ":p:h") .. ";")
  end
  if found == "" then
    return nil
  end
  return vim.fn.fnamemodify(found, ":p:h:h")
end

function M.attach(buf)
  buf = buf or vim.api.nvim_get_current_buf()
  local name = vim.api.nvim_buf_get_name(buf)
  if name == "" or vim.bo[buf].buftype ~= "" then
    return nil
  end
  local root = root_of(name)
  if root == nil then
    return nil
  end
  local config = { name = "proximity", cmd = M.cmd, root_dir = root }
  if vim.lsp.start then
    return vim.lsp.start(config, { bufnr = buf })
  end
  M.clients = M.clients or {}
  local id = M.clients[root]
  if id == nil or vim.lsp.get_client_by_id(id) == nil then
    id = vim.lsp.start_client(config)
    M.clients[root] = id
  end
  vim.lsp.buf_attach_client(buf, id)
  return id
end

function M.setup(opts)
  if opts and opts.cmd then
    M.cmd = opts.cmd
  end
  vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile" }, {
    group = vim.api.nvim_create_augroup("proximity", { clear = true }),
    callback = function(ev)
      M.attach(ev.buf)
    end,
  })
end

return M
