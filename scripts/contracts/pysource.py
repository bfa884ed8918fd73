"""Reading a framework's Python source without importing it (Python 3 standard library only).

A Source is one tree at one commit: a bare git mirror (git show COMMIT:PATH) or a plain directory (an
installed package, e.g. Debian's python3-torch). Everything here works on the AST, so no framework and none of
its dependencies have to be installed.
"""
import ast
import os
import re
import subprocess


class Source:
    def __init__(self, repository, commit, git_dir=None, root=None, ref=None):
        self.repository, self.commit, self.git_dir, self.root, self.ref = repository, commit, git_dir, root, ref
        self._cache = {}
        self._files = None

    def describe(self):
        d = {"repository": self.repository, "commit": self.commit}
        if self.ref:
            d["ref"] = self.ref
        return d

    def files(self):
        if self._files is None:
            if self.git_dir:
                out = subprocess.run(["git", "--git-dir", self.git_dir, "ls-tree", "-r", "--name-only", self.commit],
                                     check=True, capture_output=True, text=True).stdout
                self._files = out.split("\n")
            else:
                self._files = []
                for base, _, names in os.walk(self.root):
                    for n in names:
                        self._files.append(os.path.relpath(os.path.join(base, n), self.root))
        return self._files

    def exists(self, path):
        return path in set(self.files())

    def read(self, path):
        if path not in self._cache:
            if self.git_dir:
                r = subprocess.run(["git", "--git-dir", self.git_dir, "show", f"{self.commit}:{path}"],
                                   capture_output=True)
                if r.returncode != 0:
                    raise FileNotFoundError(f"{self.repository}@{self.commit}: {path}")
                self._cache[path] = r.stdout.decode("utf-8", "replace")
            else:
                with open(os.path.join(self.root, path), encoding="utf-8", errors="replace") as f:
                    self._cache[path] = f.read()
        return self._cache[path]

    def tree(self, path):
        return ast.parse(self.read(path), filename=path)


def literal(node):
    """The value of a literal expression, or None when it is not one."""
    try:
        return ast.literal_eval(node)
    except Exception:
        return None


def kw(call, name):
    for k in call.keywords:
        if k.arg == name:
            return k.value
    return None


def type_name(node):
    if node is None:
        return None
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Lambda):
        return "lambda"
    return ast.unparse(node)


def module_path(src, module):
    """megatron.core.x -> megatron/core/x.py or megatron/core/x/__init__.py (None when not in the tree)."""
    base = module.replace(".", "/")
    for cand in (base + ".py", base + "/__init__.py"):
        if src.exists(cand):
            return cand
    return None


def resolve_relative(path, node):
    """The absolute module name of an ImportFrom in file `path` (level 1 = the file's own package)."""
    if not node.level:
        return node.module
    parts = path.split("/")[:-1]
    if node.level > 1:
        parts = parts[: len(parts) - (node.level - 1)]
    return ".".join(parts) + ("." + node.module if node.module else "")


def find_class(src, path, name, depth=0):
    """(path, ClassDef) of class `name` as seen from module file `path`, following imports and re-exports."""
    if depth > 8 or path is None:
        return None
    tree = src.tree(path)
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == name:
            return path, node
    for node in ast.walk(tree):  # imports inside functions count too (Megatron imports configs lazily)
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if (alias.asname or alias.name) == name:
                    target = module_path(src, resolve_relative(path, node))
                    found = find_class(src, target, alias.name, depth + 1)
                    if found:
                        return found
    return None


def enum_members(src, path, name):
    found = find_class(src, path, name)
    if not found:
        return None
    _, cls = found
    out = []
    for node in cls.body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            out.append(node.targets[0].id)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            out.append(node.target.id)
    return out


def literal_choices(annotation):
    """Literal["a", "b"] (possibly inside Optional / X | None) -> ["a", "b"]."""
    for node in ast.walk(annotation):
        if isinstance(node, ast.Subscript) and type_name(node.value) == "Literal":
            elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            vals = [literal(e) for e in elts]
            return [v for v in vals if v is not None]
    return None


def dataclass_fields(src, path, name, depth=0):
    """Fields of a dataclass (bases first): name -> {type, default, choices, init, argparse_meta}."""
    found = find_class(src, path, name)
    if not found or depth > 8:
        return {}
    cpath, cls = found
    fields = {}
    for base in cls.bases:
        bname = type_name(base)
        if bname and bname not in ("object", "ABC", "Generic", "BaseModel", "Enum", "str"):
            fields.update(dataclass_fields(src, cpath, bname, depth + 1))
    for node in cls.body:
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        ann = ast.unparse(node.annotation)
        if ann.startswith("ClassVar"):
            continue
        f = {"type": ann, "init": True, "default": None, "line": node.lineno, "file": cpath}
        value = node.value
        if isinstance(value, ast.Call) and type_name(value.func) in ("field", "Field"):
            if kw(value, "init") is not None and literal(kw(value, "init")) is False:
                f["init"] = False
            d = kw(value, "default")
            if d is None and value.args:
                d = value.args[0]
            f["default"] = literal(d) if d is not None else None
            alias = kw(value, "alias")
            if alias is not None:
                f["alias"] = literal(alias)
            meta = kw(value, "metadata")
            if isinstance(meta, ast.Dict):
                for k, v in zip(meta.keys, meta.values):
                    if literal(k) == "argparse_meta" and isinstance(v, ast.Dict):
                        am = {}
                        for k2, v2 in zip(v.keys, v.values):
                            lk = literal(k2)
                            am[lk] = literal(v2) if literal(v2) is not None else ast.unparse(v2)
                        f["argparse_meta"] = am
        elif value is not None:
            f["default"] = literal(value)
        choices = literal_choices(node.annotation)
        if choices:
            f["choices"] = choices
        fields[node.target.id] = f
    return fields


def function_params(src, path, func_name, class_name=None):
    """Parameter names of a function or method (keyword-usable ones), with annotation and default literal."""
    tree = src.tree(path)
    scope = tree
    if class_name:
        found = find_class(src, path, class_name)
        if not found:
            return None
        scope = found[1]
    for node in ast.walk(scope):
        if isinstance(node, ast.FunctionDef) and node.name == func_name:
            a = node.args
            params = {}
            pos = a.posonlyargs + a.args
            defaults = [None] * (len(pos) - len(a.defaults)) + list(a.defaults)
            for arg, d in zip(pos, defaults):
                if arg.arg in ("self", "cls"):
                    continue
                params[arg.arg] = {"type": ast.unparse(arg.annotation) if arg.annotation else None,
                                   "default": literal(d) if d is not None else None}
            for arg, d in zip(a.kwonlyargs, a.kw_defaults):
                params[arg.arg] = {"type": ast.unparse(arg.annotation) if arg.annotation else None,
                                   "default": literal(d) if d is not None else None}
            return {"params": params, "line": node.lineno, "file": path}
    return None


def argparse_arguments(src, path, enums_from=None):
    """Every parser.add_argument('--x', ...) in a file: option string -> {dest, type, action, choices, default}."""
    tree = src.tree(path)
    out = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument"):
            continue
        names = [literal(a) for a in node.args if isinstance(literal(a), str)]
        opts = [n for n in names if n.startswith("-")]
        if not opts:
            continue
        dest = literal(kw(node, "dest")) if kw(node, "dest") is not None else None
        if dest is None:
            longest = next((o for o in opts if o.startswith("--")), opts[0])
            dest = longest.lstrip("-").replace("-", "_")
        rec = {"dest": dest, "line": node.lineno, "file": path}
        t = kw(node, "type")
        if t is not None:
            rec["type"] = type_name(t)
        a = kw(node, "action")
        if a is not None:
            rec["action"] = literal(a) if isinstance(literal(a), str) else type_name(a)
        c = kw(node, "choices")
        if c is not None:
            ch = literal(c)
            if ch is None and isinstance(c, ast.Call) and type_name(c.func) == "list" and c.args:
                enum = type_name(c.args[0])
                ch = enum_members(src, enums_from or path, enum) if enum else None
            rec["choices"] = list(ch) if ch is not None else ast.unparse(c)
        d = kw(node, "default")
        if d is not None:
            lv = literal(d)
            rec["default"] = lv if lv is not None or isinstance(d, ast.Constant) else ast.unparse(d)
        n = kw(node, "nargs")
        if n is not None and isinstance(literal(n), (str, int)):
            rec["nargs"] = literal(n)  # '*', '+', '?' or a count: how many argv elements the option takes
        for o in opts:
            out[o] = dict(rec, names=opts)
    return out


def assert_statements(src, path):
    """Every assert (test, message) in a file, with the chain of enclosing `if` tests."""
    tree = src.tree(path)
    out = []

    def visit(node, conds):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If):
                visit_block(child.body, conds + [ast.unparse(child.test)])
                visit_block(child.orelse, conds + ["not (" + ast.unparse(child.test) + ")"])
            elif isinstance(child, ast.Assert):
                out.append({"file": path, "line": child.lineno, "test": ast.unparse(child.test),
                            "message": ast.unparse(child.msg) if child.msg is not None else "", "within": conds})
            elif isinstance(child, ast.Raise):
                out.append({"file": path, "line": child.lineno, "raise": ast.unparse(child.exc) if child.exc else "",
                            "within": conds})
            else:
                visit(child, conds)

    def visit_block(stmts, conds):
        holder = ast.Module(body=stmts, type_ignores=[])
        visit(holder, conds)

    visit(tree, [])
    return out


def find_rule(statements, pattern):
    """The first assert/raise whose text matches `pattern` (a regular expression, or a pair: the pattern and
    one that one of its enclosing `if` tests must match)."""
    pattern, within = (pattern, None) if isinstance(pattern, str) else pattern
    rx = re.compile(pattern, re.S)
    for s in statements:
        text = s.get("test", "") + " " + s.get("message", "") + " " + s.get("raise", "")
        if rx.search(text) and (within is None or any(re.search(within, w) for w in s["within"])):
            return s
    return None


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def identifier_files(src, prefix, exclude=()):
    """identifier -> number of .py files under prefix (other than `exclude`) that mention it."""
    counts = {}
    for p in src.files():
        if not (p.startswith(prefix) and p.endswith(".py")) or p in exclude:
            continue
        try:
            text = src.read(p)
        except Exception:
            continue
        for ident in set(_IDENT.findall(text)):
            counts[ident] = counts.get(ident, 0) + 1
    return counts
