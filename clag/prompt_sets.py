"""Prompt sets: the words every LLM call of the note machinery, CLAG and the answer step sends.

For a 0.6B model wording is a first-order variable, so a number compared with the paper must say
whose words produced it. Two sets, one interface:

- ``own`` (:class:`OwnPrompts`): this project's wording (:mod:`clag.prompts`) of the reference's
  structure, fields and constraints.
- ``reference`` (:class:`ReferencePrompts`): the reference's exact templates, read at run time
  from its own files — dmis-lab/CLAG ``CLAG_memory.py`` (note analysis, evolution, routing,
  cluster profiles, cluster selection) and ``test_CLAG.py`` (query keywords, the answer prompts
  by category). Each template is located with :mod:`ast` (an assignment, an ``append`` or an
  augmented assignment inside a named function) and rendered by evaluating that very expression
  with the harness's values bound to the reference's variable names, so the text is the
  reference's byte for byte; the project holds no copy of it. A file that no longer has a
  template where it is expected is one :class:`ReferenceTemplateError` line.

A-mem shares CLAG's note prompts (CLAG forks A-mem's ``memory_layer.py``); its only differing
template, the query-keyword prompt, differs by the separator word (``'cosmos'`` against
``'commas'``), which ``separator_word`` substitutes in the reference text.

Every set has an ``identity`` (name and a hash of what it renders for fixed probe inputs) that
runs record in their ledger and tables use to keep different wordings apart.
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Protocol

from clag import prompts as own
from clag.errors import UserFacingError

#: the reference's files (dmis-lab/CLAG at commit c938d721040f307d71afb64db7aa6aa23fcf89cf)
REFERENCE_MEMORY_FILE = "CLAG_memory.py"
REFERENCE_EVAL_FILE = "test_CLAG.py"
REFERENCE_ROUTE_EXAMPLE_JSON = '"choice": "cluster_1"'


class ReferenceTemplateError(UserFacingError):
    """A reference file does not hold a template where the harness expects it."""


@dataclass(frozen=True)
class ClusterCandidate:
    """A cluster as routing and selection prompts show it."""

    cluster_id: str
    size: int
    summary: str
    tags: tuple[str, ...]
    examples: tuple[str, ...]        # member snippets, already cut and on one line


class PromptSet(Protocol):
    name: str
    #: the files the templates were read from (the ledger names them); none for this project's own
    files: tuple[Path, ...]

    @property
    def identity(self) -> str: ...

    def analysis(self, content: str) -> str: ...

    def evolution(self, context: str, content: str, keywords: Sequence[str], neighbours: str,
                  neighbour_count: int) -> str: ...

    def query_keywords(self, question: str, separator_word: str) -> str: ...

    def route(self, content: str, context: str, tags: Sequence[str], candidates: Sequence[ClusterCandidate],
              example_id: str) -> str: ...

    def profile(self, samples: Sequence[tuple[str, str, Sequence[str]]]) -> str: ...

    def selection(self, query: str, query_tags: Sequence[str], candidates: Sequence[ClusterCandidate],
                  top_n: int) -> str: ...

    def answer(self, category: int, context: str, question: str, options: tuple[str, str] | None) -> str: ...

    # cluster summaries the routing and selection prompts show before a cluster's first profile
    def kmeans_summary(self, top_tags: Sequence[str], contexts: Sequence[str]) -> str: ...

    def single_cluster_summary(self) -> str: ...

    def new_cluster_summary(self, tags: Sequence[str], context: str) -> str: ...


def _probe_identity(prompt_set: PromptSet) -> str:
    """Name + hash of what the set renders for fixed inputs: any change of wording changes it."""
    candidate = ClusterCandidate("c1", 2, "A summary.", ("a", "b"), ("first snippet", "second snippet"))
    renders = [
        prompt_set.analysis("Speaker Asays : hello"),
        prompt_set.evolution("ctx", "content", ["k1", "k2"], "memory index:0\t ...\n", 1),
        prompt_set.query_keywords("What?", "commas"),
        prompt_set.route("content", "ctx", ["t"], [candidate], "cluster_1"),
        prompt_set.profile([("content", "ctx", ["t"])]),
        prompt_set.selection("query", ["t"], [candidate], 10),
        *(prompt_set.answer(c, "CTX", "Q?", ("x", "y") if c == 5 else None) for c in (1, 2, 3, 4, 5, 6)),
        prompt_set.kmeans_summary(["a"], []), prompt_set.kmeans_summary([], []),
        prompt_set.single_cluster_summary(), prompt_set.new_cluster_summary(["t"], "ctx"),
    ]
    digest = hashlib.sha256("\x00".join(renders).encode()).hexdigest()[:12]
    return f"{prompt_set.name}:{digest}"


class OwnPrompts:
    """This project's wording (:mod:`clag.prompts`)."""

    name = "own"
    files: tuple[Path, ...] = ()

    @property
    def identity(self) -> str:
        return _probe_identity(self)

    def analysis(self, content: str) -> str:
        return own.analysis_prompt(content)

    def evolution(self, context: str, content: str, keywords: Sequence[str], neighbours: str,
                  neighbour_count: int) -> str:
        return own.evolution_prompt(context, content, keywords, neighbours, neighbour_count)

    def query_keywords(self, question: str, separator_word: str) -> str:
        return own.keywords_prompt(question, separator_word)

    def route(self, content: str, context: str, tags: Sequence[str], candidates: Sequence[ClusterCandidate],
              example_id: str) -> str:
        text = "\n".join(own.cluster_block(c.cluster_id, c.summary, c.tags, c.examples, c.size)
                         for c in candidates)
        return own.route_prompt(content, context, tags, text, example_id)

    def profile(self, samples: Sequence[tuple[str, str, Sequence[str]]]) -> str:
        return own.profile_prompt(samples)

    def selection(self, query: str, query_tags: Sequence[str], candidates: Sequence[ClusterCandidate],
                  top_n: int) -> str:
        text = "\n".join(own.cluster_block(c.cluster_id, c.summary, c.tags, c.examples) for c in candidates)
        return own.selection_prompt(query, query_tags, text, top_n)

    def answer(self, category: int, context: str, question: str, options: tuple[str, str] | None) -> str:
        return own.answer_prompt(category, context, question, options)

    def kmeans_summary(self, top_tags: Sequence[str], contexts: Sequence[str]) -> str:
        return own.kmeans_summary(top_tags, contexts)

    def single_cluster_summary(self) -> str:
        return own.SINGLE_CLUSTER_SUMMARY

    def new_cluster_summary(self, tags: Sequence[str], context: str) -> str:
        return own.new_cluster_summary(tags, context)


# ---- the reference's templates, located in its files -------------------------------------------

def _functions(tree: ast.AST, name: str) -> list[ast.FunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name]


def _target_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


@dataclass
class _Template:
    """One expression of the reference, compiled, and where it came from (for messages)."""

    code: Any
    where: str

    def render(self, **names: Any) -> str:
        try:
            value = eval(self.code, {"__builtins__": {}}, names)   # the pinned file's own expression
        except Exception as exc:   # noqa: BLE001 - any failure means the file is not what we expect
            raise ReferenceTemplateError(f"the reference template {self.where} does not render with "
                                         f"the harness's fields ({type(exc).__name__}: {exc})") from None
        if not isinstance(value, str):
            raise ReferenceTemplateError(f"the reference template {self.where} is not a string")
        return value


class ReferenceFile:
    """A parsed reference file: finds the template expressions of named functions."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        try:
            source = self.path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ReferenceTemplateError(f"cannot read the reference file {self.path}: "
                                         f"{exc.strerror}") from None
        try:
            self.tree = ast.parse(source, filename=str(self.path))
        except SyntaxError as exc:
            raise ReferenceTemplateError(f"{self.path} is not Python ({exc.msg}, "
                                         f"line {exc.lineno})") from None

    def _function(self, name: str) -> ast.FunctionDef:
        found = _functions(self.tree, name)
        if not found:
            raise ReferenceTemplateError(f"{self.path.name} has no function {name}(); "
                                         "the reference file is not the pinned one")
        return found[0]

    def _compile(self, node: ast.expr, where: str) -> _Template:
        return _Template(compile(ast.Expression(body=node), f"{self.path.name}:{where}", "eval"),
                         f"{self.path.name}:{where} (line {node.lineno})")

    def assigned(self, function: str, target: str, nth: int = 0, augmented: bool = False) -> _Template:
        """The ``nth`` value assigned (``=``, or ``+=`` when ``augmented``) to ``target`` in ``function``."""
        kind = ast.AugAssign if augmented else ast.Assign
        values = []
        self._function(function)          # a clear line when the function is gone
        nodes = [n for f in _functions(self.tree, function) for n in ast.walk(f)]
        for node in nodes:
            if isinstance(node, kind):
                targets = [node.target] if isinstance(node, ast.AugAssign) else node.targets
                if any(_target_name(t) == target for t in targets):
                    values.append(node.value)
        values.sort(key=lambda n: (n.lineno, n.col_offset))
        if len(values) <= nth:
            raise ReferenceTemplateError(f"{self.path.name}: {function}() has no assignment to {target!r}; "
                                         "the reference file is not the pinned one")
        return self._compile(values[nth], f"{function}.{target}")

    def appended(self, function: str, target: str) -> _Template:
        """The argument of the first ``target.append(...)`` in ``function``."""
        calls = [n for n in ast.walk(self._function(function))
                 if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "append"
                 and _target_name(n.func.value) == target and len(n.args) == 1]
        if not calls:
            raise ReferenceTemplateError(f"{self.path.name}: {function}() never appends to {target!r}; "
                                         "the reference file is not the pinned one")
        calls.sort(key=lambda n: (n.lineno, n.col_offset))
        return self._compile(calls[0].args[0], f"{function}.{target}.append")

    def branches(self, function: str, target: str, variable: str) -> dict[int | None, _Template]:
        """``target`` as assigned in each branch of an ``if variable == N: … elif … else:`` chain
        (key None: the final else)."""
        out: dict[int | None, _Template] = {}
        for node in ast.walk(self._function(function)):
            if not (isinstance(node, ast.If) and self._compares(node.test, variable) is not None):
                continue
            chain: ast.If | None = node
            while chain is not None:
                value = self._compares(chain.test, variable)
                out.setdefault(value, self._branch_value(chain.body, target, function, value))
                rest = chain.orelse
                if len(rest) == 1 and isinstance(rest[0], ast.If) and self._compares(rest[0].test, variable):
                    chain = rest[0]
                else:
                    if rest:
                        out.setdefault(None, self._branch_value(rest, target, function, None))
                    chain = None
            break
        if not out:
            raise ReferenceTemplateError(f"{self.path.name}: {function}() has no branches on {variable!r}")
        return out

    @staticmethod
    def _compares(test: ast.expr, variable: str) -> int | None:
        if (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == variable
                and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)
                and isinstance(test.comparators[0], ast.Constant)
                and isinstance(test.comparators[0].value, int)):
            return test.comparators[0].value
        return None

    def _branch_value(self, body: list[ast.stmt], target: str, function: str, key: int | None) -> _Template:
        values = [n.value for stmt in body for n in ast.walk(stmt)
                  if isinstance(n, ast.Assign) and any(_target_name(t) == target for t in n.targets)]
        if not values:
            raise ReferenceTemplateError(f"{self.path.name}: {function}() branch {key} assigns no {target!r}")
        return self._compile(values[-1], f"{function}.{target}[{'else' if key is None else key}]")


class ReferencePrompts:
    """The reference's templates (see the module docstring), rendered with the harness's fields."""

    name = "reference"

    def __init__(self, memory_file: Path, eval_file: Path) -> None:
        self._args = (Path(memory_file), Path(eval_file))
        memory, evaluation = ReferenceFile(memory_file), ReferenceFile(eval_file)
        self.files = (memory.path, evaluation.path)
        self._analysis = memory.assigned("analyze_content", "prompt")
        self._evolution = memory.assigned("__init__", "evolution_system_prompt")
        self._route = memory.assigned("route_new_memory_with_llm", "prompt")
        self._route_candidate = memory.appended("route_new_memory_with_llm", "candidates_desc")
        self._route_example = memory.appended("route_new_memory_with_llm", "examples")
        self._profile = memory.assigned("_build_cluster_profiles_with_llm", "prompt")
        self._profile_sample = memory.appended("_build_cluster_profiles_with_llm", "samples")
        self._selection = memory.assigned("select_clusters_for_query", "prompt")
        self._selection_candidate = memory.assigned("select_clusters_for_query", "prompt", augmented=True)
        self._selection_example = memory.appended("select_clusters_for_query", "examples")
        self._keywords = evaluation.assigned("generate_query_llm", "prompt")
        self._answers = evaluation.branches("answer_question", "user_prompt", "category")
        # cluster_memories_kmeans assigns ``summary`` four times, in this order: one cluster of
        # everything; the commonest tags; the first member's context; the generic line
        self._summaries = [memory.assigned("cluster_memories_kmeans", "summary", nth=i) for i in range(4)]
        self._new_cluster_summary = memory.assigned("_create_new_cluster", "summary")
        if None not in self._answers or 5 not in self._answers:
            raise ReferenceTemplateError(f"{evaluation.path.name}: answer_question() lacks the category-5 or "
                                         "default answer prompt")
        self._evolution_text = self._evolution.render()

    def __reduce__(self) -> tuple[type, tuple[Path, Path]]:
        """Memory snapshots pickle their prompt set: it travels as its files and is parsed again."""
        return ReferencePrompts, self._args

    @property
    def identity(self) -> str:
        return _probe_identity(self)

    def analysis(self, content: str) -> str:
        return self._analysis.render(content=content)

    def evolution(self, context: str, content: str, keywords: Sequence[str], neighbours: str,
                  neighbour_count: int) -> str:
        # the reference formats this class attribute with str.format (keywords: the note's list)
        return self._evolution_text.format(context=context, content=content, keywords=list(keywords),
                                           nearest_neighbors_memories=neighbours,
                                           neighbor_number=neighbour_count)

    def query_keywords(self, question: str, separator_word: str) -> str:
        text = self._keywords.render(question=question)
        if separator_word != "commas":     # A-mem's template: the same text with its own separator
            if text.count("'commas'") != 1:
                raise ReferenceTemplateError("the reference keyword prompt does not name its separator once")
            text = text.replace("'commas'", f"'{separator_word}'")
        return text

    def _example_block(self, template: _Template, candidate: ClusterCandidate) -> str:
        return "\n".join(template.render(snippet=snippet) for snippet in candidate.examples)

    def route(self, content: str, context: str, tags: Sequence[str], candidates: Sequence[ClusterCandidate],
              example_id: str) -> str:
        blocks = [self._route_candidate.render(cid=c.cluster_id, size=c.size, summary=c.summary,
                                               tags=list(c.tags),
                                               example_block=self._example_block(self._route_example, c))
                  for c in candidates]
        note = SimpleNamespace(content=content, context=context, tags=list(tags))
        text = self._route.render(note=note, candidates_text="\n".join(blocks))
        if example_id != own.REFERENCE_ROUTE_EXAMPLE:    # a named repair: a real id as the example
            if text.count(REFERENCE_ROUTE_EXAMPLE_JSON) != 1:
                raise ReferenceTemplateError("the reference routing prompt does not show its example once")
            text = text.replace(REFERENCE_ROUTE_EXAMPLE_JSON, f'"choice": "{example_id}"')
        return text

    def profile(self, samples: Sequence[tuple[str, str, Sequence[str]]]) -> str:
        rendered = [self._profile_sample.render(m=SimpleNamespace(content=c, context=ctx, tags=list(t)))
                    for c, ctx, t in samples]
        return self._profile.render(samples_text="\n".join(rendered))

    def selection(self, query: str, query_tags: Sequence[str], candidates: Sequence[ClusterCandidate],
                  top_n: int) -> str:
        text = self._selection.render(top_n=top_n, query=query, query_tags=list(query_tags))
        for c in candidates:
            cd = {"cluster_id": c.cluster_id, "summary": c.summary, "cluster_tags": list(c.tags),
                  "examples": self._example_block(self._selection_example, c)}
            text += self._selection_candidate.render(cd=cd)
        return text

    def kmeans_summary(self, top_tags: Sequence[str], contexts: Sequence[str]) -> str:
        index = 1 if top_tags else 2 if contexts else 3          # the reference's if / elif / else
        return self._summaries[index].render(top_tags=list(top_tags), contexts=list(contexts))

    def single_cluster_summary(self) -> str:
        return self._summaries[0].render()

    def new_cluster_summary(self, tags: Sequence[str], context: str) -> str:
        return self._new_cluster_summary.render(note=SimpleNamespace(tags=list(tags), context=context))

    def answer(self, category: int, context: str, question: str, options: tuple[str, str] | None) -> str:
        template = self._answers.get(category, self._answers[None])
        if category == 5 and options is None:
            raise ValueError("a category-5 answer prompt needs its two options")
        return template.render(context=context, question=question, answer_tmp=list(options or ()))


#: the reference's controller classes, by the request format that mirrors them
REFERENCE_CONTROLLERS = {"openai": "OpenAIController"}


def reference_system_message(memory_file: Path, controller: str = REFERENCE_CONTROLLERS["openai"]) -> str:
    """The system message the reference's ``controller`` sends before every prompt, read from its
    ``get_completion`` (the first message literal whose role is ``system``), never typed here."""
    reference = ReferenceFile(memory_file)
    classes = [n for n in ast.walk(reference.tree) if isinstance(n, ast.ClassDef) and n.name == controller]
    methods = [n for c in classes for n in c.body
               if isinstance(n, ast.FunctionDef) and n.name == "get_completion"]
    for method in methods:
        for node in ast.walk(method):
            if not isinstance(node, ast.Dict):
                continue
            fields = {k.value: v for k, v in zip(node.keys, node.values)
                      if isinstance(k, ast.Constant) and isinstance(k.value, str)}
            role, content = fields.get("role"), fields.get("content")
            if (isinstance(role, ast.Constant) and role.value == "system"
                    and isinstance(content, ast.Constant) and isinstance(content.value, str)):
                return content.value
    raise ReferenceTemplateError(f"{Path(memory_file).name}: {controller}.get_completion() sends no "
                                 "system message literal; the reference file is not the pinned one")
