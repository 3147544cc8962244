"""E10.4 under ``course-grade``: the shortcuts a student would try on Parts 1-3 (every decoder
step at once) score 0 there, and an honest loop over the steps earns half. One batch:

- the library's step-by-step scores called in a loop over the steps;
- the library's source run by ``exec`` and reached through a dict at run time (no name of the
  graded function leads to it, so only the run-time rule of ``checks.all_steps`` sees it);
- a table of answers looked up by the inputs (the grader's inputs are new each run);
- the student's own loops over the steps: right numbers, half the points."""

import nbformat
from helpers import ROOT, calibrated_limits

from course_utils.checks import notebook_of
from course_utils.tools.grading import grade_folder

LIMITS = calibrated_limits(cell_seconds=120, total_seconds=500)

LIBRARY_LOOP = {
    "dot_scores": '''from course_utils.scores import DotAttention, ScaledDotAttention
def dot_scores(S, H, scaled):
    m = (ScaledDotAttention if scaled else DotAttention)(S.shape[-1], S.shape[-1])
    return torch.stack([m.energies(S[:, t], H) for t in range(S.shape[1])], 1)''',
    "scaled_dot_attention": '''def scaled_dot_attention(S, H, mask):
    m = ScaledDotAttention(S.shape[-1], S.shape[-1])
    out = [m(S[:, t], H, mask) for t in range(S.shape[1])]
    return torch.stack([w for _, w in out], 1), torch.stack([c for c, _ in out], 1)''',
    "general_scores": '''def general_scores(S, H, W):
    m = GeneralAttention(H.shape[-1], S.shape[-1])
    m.W.weight.data = W
    k = m.project_keys(H)
    return torch.stack([m.energies(S[:, t], k) for t in range(S.shape[1])], 1)''',
    "additive_scores": '''from course_utils.attention import BahdanauAttention
def additive_scores(S, H, W_s, W_h, v):
    m = BahdanauAttention(H.shape[-1], S.shape[-1], v.shape[0])
    m.load_state_dict({"W_s.weight": W_s, "W_h.weight": W_h, "v.weight": v[None]})
    k = m.project_keys(H)
    return torch.stack([m.energies(S[:, t], k) for t in range(S.shape[1])], 1)''',
}

EXEC_LIBRARY = {
    "dot_scores": '''import inspect
import course_utils.attention as _att
import course_utils.scores as _lib
_ns = {}
exec(inspect.getsource(_att), _ns)
exec(inspect.getsource(_lib).replace(
    "from course_utils.attention import Attention, BahdanauAttention", ""), _ns)
def dot_scores(S, H, scaled):
    m = _ns["ScaledDotAttention" if scaled else "DotAttention"](S.shape[-1], S.shape[-1])
    return torch.stack([m.energies(S[:, t], H) for t in range(S.shape[1])], 1)''',
    "scaled_dot_attention": '''def scaled_dot_attention(S, H, mask):
    m = _ns["ScaledDotAttention"](S.shape[-1], S.shape[-1])
    out = [m(S[:, t], H, mask) for t in range(S.shape[1])]
    return torch.stack([w for _, w in out], 1), torch.stack([c for c, _ in out], 1)''',
    "general_scores": '''def general_scores(S, H, W):
    m = _ns["GeneralAttention"](H.shape[-1], S.shape[-1])
    m.W.weight.data = W
    return torch.stack([m.energies(S[:, t], m.project_keys(H)) for t in range(S.shape[1])], 1)''',
    "additive_scores": '''def additive_scores(S, H, W_s, W_h, v):
    m = _ns["BahdanauAttention"](H.shape[-1], S.shape[-1], v.shape[0])
    m.load_state_dict({"W_s.weight": W_s, "W_h.weight": W_h, "v.weight": v[None]})
    return torch.stack([m.energies(S[:, t], m.project_keys(H)) for t in range(S.shape[1])], 1)''',
}

TABLE = {
    "dot_scores": '''_table = {}
def dot_scores(S, H, scaled):
    key = (tuple(S.shape), round(float(S.sum()), 3), bool(scaled))
    return _table.get(key, torch.zeros(S.shape[0], S.shape[1], H.shape[1]))''',
}

OWN_LOOPS = {
    "dot_scores": '''def dot_scores(S, H, scaled):
    rows = [torch.bmm(H, S[:, t].unsqueeze(-1)).squeeze(-1) for t in range(S.shape[1])]
    scores = torch.stack(rows, 1)
    return scores / math.sqrt(S.shape[-1]) if scaled else scores''',
    "additive_scores": '''def additive_scores(S, H, W_s, W_h, v):
    keys = H @ W_h.T
    return torch.stack([torch.tanh(keys + (S[:, t] @ W_s.T).unsqueeze(1)) @ v
                        for t in range(S.shape[1])], 1)''',
}


def variant(replacements: dict[str, str]) -> nbformat.NotebookNode:
    notebook = nbformat.read(notebook_of("E10.4", ROOT / "solutions"), as_version=4)
    for cell in notebook.cells:
        for name, source in replacements.items():
            if cell.cell_type == "code" and cell.source.startswith(f"def {name}("):
                cell.source = source
    return notebook


def test_shortcuts_on_the_all_steps_parts_score_zero_and_own_loops_half(tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    for student, replacements in {"library_loop": LIBRARY_LOOP, "exec_library": EXEC_LIBRARY,
                                  "table": TABLE, "own_loops": OWN_LOOPS}.items():
        nbformat.write(variant(replacements), subs / f"{student}.ipynb")
    results = {r.student: r for r in grade_folder("E10.4", subs, tmp_path / "out",
                                                  limits=LIMITS, progress=False)}
    parts = ("dot", "scaled_dot", "general", "additive")
    for student in ("library_loop", "exec_library"):
        result = results[student]
        assert result.status == "graded", result.notes
        assert all(result.points[p] == 0 for p in parts), (student, result.messages)
        assert result.points["low_rank"] == 2
    assert "library" in results["library_loop"].messages["dot"]
    for part in parts:
        assert "runs code from `<string>`" in results["exec_library"].messages[part]
    assert results["table"].points["dot"] == 0
    assert results["table"].points["additive"] == 2
    loops = results["own_loops"]
    assert (loops.points["dot"], loops.points["additive"]) == (1, 1), loops.messages
    assert "loops over each decoder step" in loops.messages["dot"]
    # scaled_dot_attention calls the looping dot_scores: the loop is counted there too
    assert (loops.points["scaled_dot"], loops.points["general"]) == (1, 1)
