"""The backward pass (--backward): a schedule over the forward plan, from the loss back to the
weights and the input, one stage per gradient, in backward order.

    dO (or dA, for `attend`)                                the loss's gradient
    one walk back over the forward plan (`walk`, micrograd's): in reverse topological order
    from the output, each stage that has a gradient hands it on by its own op (Op.plan_back,
    else the chain rule through its first operand):
                d(concat) = dO·W_Oᵀ, dW_O = concatᵀ·dO, db_O   W_O (ops/projection.py)
                each head's columns of d(concat)      the concat (ops/concat.py), head by head
                                                      walked back through what a feature put
                                                      after it, by its ops
                dV = Aᵀ·dO, dA = dO·Vᵀ               A·V (ops/projection.py)
                r = Σⱼ Aᵢⱼ·dAᵢⱼ, dS = A ⊙ (dA − r)    the softmax (ops/softmax.py)
                back through the mask, a cap, a bias, the scaling, each by its op's backward
                dQ = dS·K, dK = dSᵀ·Q                Q·Kᵀ, the turn of Kᵀ folded in
                back through the features' turns (a rotation, a norm) to Q and K
              head 1's stages first, then head 2's; with `attend`, a walk from each head's
              weights (dA from the targets)
    then:     the walk stops at the projections of X (each head's Q, K, V and a feature's,
              a slice of one learned weight); each weight's op gathers its heads' gradients
              (Op.gather, ops/projection.py): dW_Q = Xᵀ·[dQ_1 … dQ_H], dW_K, dW_V (summed
              over the query heads that share a key/value head), db = column sums, its share
              of dX; dX = dQ·W_Qᵀ + dK·W_Kᵀ + dV·W_Vᵀ (+ a feature's), the shares added; and
              the gradients of a feature's own learned numbers (Feature.grads). Projections
              that read what projections made (latent attention's W_UQ reads
              C_Q = RMSNorm(X·W_DQ)) are gathered first, and that input's gradient (dC_Q) is
              walked on to the ones that made it (`_gathered_grads`, in rounds)

In tiles (--tiles B) the walk from the output stops at the heads' outputs: each head's part
from dO to dQ, dK, dV of what the scores read is FlashAttention-2's, one block of keys at a
time (qkvcalc.plan.tiles_backward); a walk per head goes on from there.

Stage ids are `grad_` + the id of the forward stage whose gradient it is (DESIGN's list);
the heads' stages carry their head. The walk reads nothing of a feature but its ops: a new
feature's gradient comes with its op's `backward` (or `plan_back`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from qkvcalc.errors import QkvcalcError
from qkvcalc.i18n import Msg
from qkvcalc.input.problem import Problem
from qkvcalc.ops import features, loss
from qkvcalc.ops.op import Back, Part
from qkvcalc.ops.projection import Named, input_grad, learned
from qkvcalc.ops.table import OPS
from qkvcalc.plan import ids
from qkvcalc.plan import notes as facts
from qkvcalc.plan.masks import allowed_keys
from qkvcalc.plan.specs import Const, Ref, Spec, d, span, together
from qkvcalc.plan.tiles import blocks
from qkvcalc.plan.tiles_backward import plain_values, same_as_plain, tiled_head


def backward(
    p: Problem, forward: Sequence[Spec], plain: Callable[[], Sequence[Spec]] | None = None
) -> list[Spec]:
    """The backward stages of a run whose forward stages are `forward`; in tiles
    (qkvcalc.plan.tiles_backward), `plain` gives the whole plan of the same problem without
    tiles, which the note on each head's last stage executes again."""
    if p.loss is None:  # a linear layer's loss cannot be attend's (below)
        raise QkvcalcError("backward.no_loss_mixer" if features.mixing(p) else "backward.no_loss")
    if p.decode is not None:
        raise QkvcalcError("backward.decode")
    assert p.tiles is None or plain is not None
    plain_run = plain_values(plain) if plain is not None else None
    by = {s.ref: s for s in forward}
    heads: list[int | None] = list(range(1, p.heads + 1)) if p.multihead else [None]
    specs: list[Spec] = []
    flows = p.loss.kind != "attend"  # the loss reads the output (else: the weights alone)
    softmaxes: list[tuple[Ref, Ref]] = []  # each head's weights and its softmax's row term
    whole: list[Spec] = []  # the plan, forward and backward, that the √d_k note runs again

    def whole_plan() -> list[Spec]:
        return whole

    walked: dict[Ref, Ref] = {}  # each forward stage's gradient, by ref
    shares: dict[Ref, list[Part]] = {}  # a projection read by several: each reader's share
    tiled = p.tiles is not None
    if flows:  # one walk from the output back over the whole plan (in tiles: to the heads')
        final = by[(ids.OUTPUT, None)]
        specs.append(_start(p, final))
        stops = {(ids.OUTPUT, h) for h in heads} if tiled else set()
        seeds = {final.ref: specs[0].ref}
        more, walked = walk(p, by, [final], seeds, whole_plan, specs, stops, shares)
        specs += more
    else:
        if features.mixing(p) is not None:  # a linear layer's weights are no softmax's
            raise QkvcalcError("backward.attend_mixer")
        _check_targets(p)
    for h in heads:
        if not flows or tiled:  # `attend`, from each head's weights; in tiles, FlashAttention-2's
            head, grads = _head(p, by, specs, h, flows, plain_run, whole_plan, shares)
            specs += head
            walked.update(grads)
        if p.tiles is None:
            softmaxes.append((("weights", h), ("softmax_rowdot", h)))
        else:  # the tiled run keeps no weights: each head's log-sum-exp and D instead
            softmaxes.append((("lse", h), ("rowdot_o", h)))
    for read, its in shares.items():  # k_R: every head's share in, the sum
        summed = _summed(by[read], its)
        specs.append(summed)
        walked[read] = summed.ref
        if learned(by[read]) is None:  # not a projection (a key/value head): walked on from it
            more, reached = walk(p, by, [by[read]], {read: summed.ref}, whole_plan, specs)
            specs += more
            walked.update(reached)
    specs += _gathered_grads(p, by, walked, specs)
    for feature, value in features.active(p):
        if feature.grads is not None:
            specs += feature.grads(p, value, softmaxes)
    for feature, value in features.active(p):  # what a feature says on the stages
        if feature.back_notes is not None:
            specs = feature.back_notes(p, value, specs)
    # how each cell is named in its arithmetic: dV[2,1], dW_Q[1,2]
    specs = [s if s.cell else replace(s, cell=s.symbol + "[{i},{j}]") for s in specs]
    specs = _grouped([_counted(s, by) for s in specs])
    whole[:] = [*forward, *specs]
    return specs


def _counted(spec: Spec, by: dict[Ref, Spec]) -> Spec:
    """A gradient's head number counts what its forward stage's counts (Spec.unit: the
    gradient of a pair's stage is the pair's)."""
    forward = by.get((spec.id.removeprefix("grad_"), spec.head))
    if forward is None or forward.unit == spec.unit:
        return spec
    return replace(spec, unit=forward.unit)


def _grouped(specs: list[Spec]) -> list[Spec]:
    """With pairs of heads (Spec.unit), the heads' and pairs' stages grouped where the first
    of them was: each pair's (in order), then each head's (in order). The walk plans dA of both
    heads of a pair at once, and dV of both, so its own order went head 1, head 2, head 1, …
    The order stays the walk's when nothing counts pairs, or (a guard) when the grouping
    would read a gradient before it is made."""
    if not any(s.unit for s in specs):
        return specs
    base = next(k for k, s in enumerate(specs) if s.head is not None)
    keys: list[tuple[int, ...]] = [
        (k,) if s.head is None else (base, 0 if s.unit else 1, s.head, k)
        for k, s in enumerate(specs)
    ]
    order = [specs[key[-1]] for key in sorted(keys)]
    planned, made = {s.ref for s in specs}, set()
    for s in order:
        if any(o in planned and o not in made for o in s.operands if not isinstance(o, Const)):
            return specs
        made.add(s.ref)
    return order


# ---- where the gradient starts ----------------------------------------------------------------


def _start(p: Problem, final: Spec) -> Spec:
    """dO, by the loss's op (ops/loss.py), with what the plan says of a target."""
    assert p.loss is not None and p.loss.matrix is not None
    if p.loss.kind != "target":
        return loss.start(p, final)
    t = p.loss.matrix.values
    return loss.start(p, final, (facts.target_rows(p, t),), facts.loss_target(final.ref, t))


def _check_targets(p: Problem) -> None:
    """`attend`: every target key must be one its query may see."""
    loss.check_targets(p, allowed_keys(p))


# ---- one head: the walk back over its forward stages -----------------------------------------


def _head(
    p: Problem,
    by: dict[Ref, Spec],
    made: Sequence[Spec],
    h: int | None,
    flows: bool,
    plain_run: Callable[[], dict[Ref, np.ndarray]] | None = None,
    whole: Callable[[], Sequence[Spec]] = list,
    shares: dict[Ref, list[Part]] | None = None,
) -> tuple[list[Spec], dict[Ref, Ref]]:
    """A head's gradients back to Q, K and V where they do not come down from the output by
    the one walk: in tiles, FlashAttention-2's, one block of keys at a time; with `attend`,
    from its weights' (dA, from the targets), the walk over its stages from there. `made`:
    the gradients made before. Returns its stages and each forward stage's gradient by ref."""
    if p.tiles is not None:
        assert plain_run is not None
        return _tiled(p, by, h, flows, plain_run, shares)
    out = by[(ids.OUTPUT, h)]
    a_ref = out.operands[0]
    assert not flows and not isinstance(a_ref, Const)
    specs = [_attend(p, h, by[a_ref])]
    seeds = {a_ref: specs[-1].ref}
    walked, grads = walk(p, by, [out], seeds, whole, [*made, *specs], _across(by), shares)
    specs += walked
    return specs, grads


def _across(by: dict[Ref, Spec]) -> set[Ref]:
    """The stages before the heads that several heads read (the one key/value head C_KV): a
    walk over one head stops there, since each head hands back only its share (summed, and
    walked on, once every head's is in)."""
    readers: dict[Ref, set[int | None]] = {}
    for spec in by.values():
        for o in spec.operands:
            if not isinstance(o, Const) and o in by and by[o].head is None:
                readers.setdefault(o, set()).add(spec.head)
    return {o for o, heads in readers.items() if len(heads - {None}) > 1}


def _attend(p: Problem, h: int | None, weights: Spec) -> Spec:
    """`attend`: dA from the targets alone, by the loss's op (ops/loss.py), with what the plan
    says of the targets."""
    assert p.loss is not None
    targets = p.loss.targets()
    said = (facts.attend_keys(p, targets),)
    return loss.attend(p, h, weights, said, facts.loss_attend(weights.ref, targets, h))


def walk(
    p: Problem,
    by: dict[Ref, Spec],
    roots: Sequence[Spec],
    seeds: dict[Ref, Ref],
    whole: Callable[[], Sequence[Spec]] = list,
    made: Sequence[Spec] = (),
    stops: Collection[Ref] = (),
    shares: dict[Ref, list[Part]] | None = None,
) -> tuple[list[Spec], dict[Ref, Ref]]:
    """micrograd's backward over forward stages: in reverse topological order from `roots`,
    each stage that has a gradient (`seeds`: forward ref -> its gradient's ref, to begin
    with) hands it to its operands by its own op (`Op.plan_back`, else the chain rule through
    its first operand); `made`: the gradient stages made before (the seeds'). Returns the
    gradient stages, in order, and every forward stage's gradient by ref.

    A stage whose operands have their gradients already hands nothing on: its reader's op
    planned through it (the concat through what a feature put after a head); nor does one
    that reads no stage (Q, K, V given). A stage read by several (the shared rotary key k_R)
    gets a share from each reader's op (`Part`, kept in `shares`), and the walk adds them in
    one stage when it reaches it (micrograd's +=); at a projection it leaves that to the
    caller, since per-head walks (`attend`, tiles) each hand back one head's share. The walk
    stops at the projections of X (Q, K, V and a feature's), whose gradients their op gathers
    over the heads after it (Op.gather), and at `stops` (in tiles, each head's output)."""
    grads = dict(seeds)
    known: dict[Ref, Spec] = {**by, **{spec.ref: spec for spec in made}}
    back = Back(
        p,
        known,
        lambda topic, head: _remarks(p, by, topic, head, whole),
        OPS,
        lambda roots, seeds, made, stops: walk(p, by, roots, seeds, whole, made, stops, parts),
    )
    ends = {*stops, *(ref for ref, spec in by.items() if learned(spec) is not None)}
    specs: list[Spec] = []
    parts = shares if shares is not None else {}  # a stage read by several: each one's share
    for at in _reverse_topological(by, roots, ends):
        if at.ref in parts and at.ref not in grads and at.ref not in ends:  # all handed back
            summed = _summed(at, parts.pop(at.ref))
            grads[at.ref] = summed.ref
            known[summed.ref] = summed
            specs.append(summed)
        g = grads.get(at.ref)
        reads = [o for o in at.operands if not isinstance(o, Const) and o in by]
        if g is None or at.ref in ends or all(o in grads for o in reads):
            continue
        op = OPS[at.op]
        planned = op.plan_back(back, at, g) if op.plan_back else [_chain(by, at, g)]
        for part in [s for s in planned if isinstance(s, Part)]:
            parts.setdefault(part.of, []).append(part)
        planned = [s for s in planned if not isinstance(s, Part)]
        for spec in planned:
            forward = (spec.id.removeprefix("grad_"), spec.head)
            if spec.id.startswith("grad_") and forward in by:
                assert forward not in grads, f"{forward} would need two gradients added"
                grads[forward] = spec.ref
            known[spec.ref] = spec
        specs += planned
    return specs, grads


def _summed(at: Spec, parts: Sequence[Part]) -> Spec:
    """The gradient of a stage read by several (the shared rotary key k_R, by every head's
    key): the readers' shares added, micrograd's +=."""
    first = parts[0]
    into = d(at.symbol)
    width = first.cols.stop - first.cols.start
    where = f"[:, {span(first.cols.start, width)}]"
    stacked = first.rows != slice(None)  # rows under others' (keys appended to a head's)
    if stacked:
        where = f"[{span(first.rows.start, first.rows.stop - first.rows.start)}, :]"
    said = f"{first.symbol}ₕ{where}"
    symbols = list(dict.fromkeys(part.symbol for part in parts))
    notes: tuple[Msg, ...] = ()
    if len(parts) > 1:
        notes = (Msg("note.grad_shared", count=len(parts), x=at.symbol),)
    formula = f"{into} = Σₕ {said}" if len(parts) > 1 else f"{into} = {said}"
    if len(symbols) > 1:  # read whole as several things in each head (K = V = C_KV): all added
        heads = len(parts) // len(symbols)
        formula = f"{into} = Σₕ ({'ₕ + '.join(symbols)}ₕ)" + (where if stacked else "")
        if heads == 1:
            formula = (
                f"{into} = ({' + '.join(symbols)})" + where
                if stacked
                else (f"{into} = {' + '.join(symbols)}")
            )
        names = ", ".join(s.removeprefix("d") for s in symbols)
        notes = (Msg("note.grad_shared_whole", count=len(parts), x=at.symbol, heads=heads,
                     names=names),)  # fmt: skip
    if stacked:  # its rows under a head's own, in each head's K' (and V'): those rows added
        names = ", ".join(s.removeprefix("d").strip("()") for s in symbols)
        notes = (Msg("note.grad_shared_rows", count=len(parts), x=at.symbol, names=names,
                     rows=where[1:-4]),)  # fmt: skip
    return Spec(
        f"grad_{at.id}",
        at.head,
        "grad_sum",
        tuple(part.grad for part in parts),
        formula,
        at.rows,
        at.cols,
        params={
            "cols": tuple(part.cols for part in parts),
            **({"rows": tuple(part.rows for part in parts)} if stacked else {}),
        },
        symbol=into,
        letters=at.letters,
        notes=notes,
    )


def _reverse_topological(
    by: dict[Ref, Spec], roots: Sequence[Spec], ends: Collection[Ref] = ()
) -> list[Spec]:
    """The stages `roots` read, themselves included, each after every stage that reads it
    (micrograd's topological sort, reversed). Operands are visited last to first, so that the
    walk goes down the first operand's side first (the query's before the key's, head 1's
    before head 2's); it does not go past the projections (`ends`)."""
    order: list[Spec] = []
    seen: set[Ref] = set()

    def visit(spec: Spec) -> None:
        if spec.ref in seen:
            return
        seen.add(spec.ref)
        if spec.ref not in ends:
            for operand in reversed(spec.operands):
                if not isinstance(operand, Const) and operand in by:
                    visit(by[operand])
        order.append(spec)

    for root in reversed(roots):
        visit(root)
    return order[::-1]


def _remarks(
    p: Problem, by: dict[Ref, Spec], topic: str, h: int | None, whole: Callable[[], Sequence[Spec]]
) -> Any:
    """What the plan says beside a gradient, by its topic: through the softmax, what the
    scaling does to it (a note that runs the whole plan again)."""
    if topic == ids.TOPIC_GRAD_LOGITS:
        return facts.gradient_through_softmax(p, h, list(by.values()), whole)
    return None


def _chain(by: dict[Ref, Spec], at: Spec, g: Ref) -> Spec:
    """The chain rule through a stage's first operand, by its op's own backward: dS from
    d(S+M), dQ from dQ_rot (a scaling, a mask, a cap, a bias, a turn)."""
    before = by[at.operands[0]]
    op = OPS[at.op]
    assert op.backward is not None and op.grad_formula is not None, at.op
    into, out = d(before.symbol), d(at.symbol)
    rule = f"{into} = {op.grad_formula(into, out, before.symbol, at.params)}"
    return Spec(
        f"grad_{before.id}",
        at.head,
        ids.BACK_OP,
        (*at.operands, at.ref, g),
        rule,
        before.rows,
        before.cols,
        params={"op": at.op, "forward": op, "index": 0, "of": at.params},
        topic=f"grad_back.{at.params.get('back_topic', at.op)}",  # a latent's norm: its own words
        hint=("hint.grad_back", {"rule": rule, "out": out}),
        symbol=into,
        letters=before.letters,
    )


def _tiled(
    p: Problem,
    by: dict[Ref, Spec],
    h: int | None,
    flows: bool,
    plain_run: Callable[[], dict[Ref, np.ndarray]],
    shares: dict[Ref, list[Part]] | None = None,
) -> tuple[list[Spec], dict[Ref, Ref]]:
    """The head's blocks (qkvcalc.plan.tiles_backward) up to dQ, dK, dV of what the scores
    read, then the walk back from there to Q and K; the note on its last stage compares the
    totals with the plain backward's. Returns its stages and each forward stage's gradient."""
    specs, refs, q_side, k_side = tiled_head(p, by, h, flows)
    sides = [f"grad_{q_side.id}", f"grad_{k_side.id}", *(["grad_v"] if flows else [])]
    seeds: dict[Ref, Ref] = {s.ref: (f"grad_{s.id}", h) for s in (q_side, k_side)}
    walked, grads = walk(p, by, [q_side, k_side], seeds, made=specs, stops=_across(by),
                         shares=shares)  # fmt: skip
    specs += walked
    if "v" in refs:
        grads[(ids.V, h)] = refs["v"]
        v = by[(ids.V, h)]
        op = OPS[v.op]
        if learned(v) is None and (op.plan_back or op.backward):  # the one key/value head
            more, reached = walk(p, by, [v], {v.ref: refs["v"]}, made=specs, stops=_across(by),
                                 shares=shares)  # fmt: skip
            specs += more
            grads.update(reached)
    note = same_as_plain(h, len(blocks(p)), sides, plain_run)
    specs[-1] = replace(specs[-1], remarks=together(specs[-1].remarks, note))
    return specs, grads


# ---- the weights and the input ----------------------------------------------------------------


def _gathered_grads(
    p: Problem, by: dict[Ref, Spec], found: dict[Ref, Ref], made: Sequence[Spec] = ()
) -> list[Spec]:
    """The projections, one learned weight at a time, in plan order (W_Q, W_K, W_V, then a
    feature's): each gathers its heads' gradients (`found`: forward ref -> its gradient's) by
    its op's own rule (Op.gather: dW, db, and its share of what it read); then the gradient
    of what they read, the shares of every weight that reads it added: dX (and dsource).

    A projection may read what other projections made (multi-head latent attention: each
    head's W_UQ reads the latent C_Q = RMSNorm(X·W_DQ)). Those inputs come first, in rounds:
    an input is gathered once no projection that reads it still waits for its gradient (none
    lies before another input not yet gathered); its gradient is handed on by the walk, back
    to the projections it came from (through the latent's norm, to X·W_DQ)."""
    weights: dict[str, list[Spec]] = {}
    for spec in by.values():
        whole = learned(spec)
        if whole is not None:
            weights.setdefault(whole.letter, []).append(spec)
    readers: dict[Ref, list[str]] = {}  # what each input feeds: every weight that reads it
    for letter, heads in weights.items():
        read = heads[0].operands[0]
        assert not isinstance(read, Const)
        readers.setdefault(read, []).append(letter)
    before = {read: _before(by, read) | {read} for read in readers}  # itself: KDA's F_a
    found = dict(found)
    specs: list[Spec] = []
    pending = list(readers)
    while pending:
        ready = [
            read
            for read in pending
            if not any(
                s.ref in before[other]
                for letter in readers[read]
                for s in weights[letter]
                for other in pending
                if other != read
            )
        ]
        assert ready, "the projections read each other in a circle"
        pending = [read for read in pending if read not in ready]
        specs += _gathered_round(p, by, found, [*made, *specs], weights, readers, ready)
    return specs


def _learned_of(weights: dict[str, list[Spec]], letters: Sequence[str]) -> list[Any]:
    """What the stages of these weights say they are slices of (`Learned`), in order."""
    return [learned(s) for letter in letters for s in weights[letter]]


def _before(by: dict[Ref, Spec], ref: Ref) -> set[Ref]:
    """Every stage `ref` is computed from (its ancestors in the plan)."""
    seen: set[Ref] = set()
    todo = [ref]
    while todo:
        for operand in by[todo.pop()].operands:
            if not isinstance(operand, Const) and operand in by and operand not in seen:
                seen.add(operand)
                todo.append(operand)
    return seen


def _gathered_round(
    p: Problem,
    by: dict[Ref, Spec],
    found: dict[Ref, Ref],
    made: Sequence[Spec],
    weights: dict[str, list[Spec]],
    readers: dict[Ref, list[str]],
    ready: Sequence[Ref],
) -> list[Spec]:
    """One round of `_gathered_grads`: the weights that read the inputs `ready` gathered, in
    plan order, then each input's gradient; an input that a projection made (C_Q) hands its
    gradient on by the walk, and `found` learns what that walk reached."""
    back = Back(p, by, lambda topic, head: None, OPS)
    shares: dict[Ref, list[Any]] = {read: [] for read in ready}  # those the loss reaches
    specs: list[Spec] = []
    for heads in weights.values():
        read = heads[0].operands[0]
        if read not in shares:
            continue
        reached = [s for s in heads if s.ref in found]
        if not reached:  # `attend`: V (and what comes after the weights) do not reach it
            continue
        gather = OPS[heads[0].op].gather
        assert gather is not None, heads[0].op
        its, share = gather(back, reached, [found[s.ref] for s in reached])
        specs += its
        shares[read].append(share)
    learned_before = {ref for ref, spec in by.items() if learned(spec) is not None}
    onward: list[Ref] = []
    for read, its in shares.items():
        # made by a projection: the latent C_Q (after its norm), or itself one (KDA's F_a = X·W_fa)
        made_by_projection = bool((_before(by, read) | {read}) & learned_before)
        if made_by_projection and not its:
            continue
        spec = input_grad(by[read], _named(by[read], made_by_projection), readers[read], its)
        topic = next((w.topic for w in _learned_of(weights, readers[read]) if w.topic), "")
        if topic:  # X read by multi-head latent attention's down-projections: their words
            spec = replace(spec, topic=topic)
        specs.append(spec)
        if made_by_projection:
            found[read] = spec.ref
            onward.append(read)
    for read in onward:  # back through the latent's norm to the projections that made it
        walked, grads = walk(p, by, [by[read]], {read: found[read]}, made=[*made, *specs])
        specs += walked
        found.update(grads)
    return specs


def _named(read: Spec, made: bool = False) -> Named:
    """How the gradient of an input the projections read is named: dsource, or dX (of X, or
    of X + PE: then with its note); of one a projection made (`made`: the latent C_Q), by its
    own stage and symbol (dC_Q)."""
    if made:
        return Named(f"grad_{read.id}", read.symbol, read.letters)
    if read.id == "source":
        return Named("grad_source", "source", "m×d_model")
    pe = (Msg("note.grad_pe"),) if read.id == "x_pe" else ()
    return Named("grad_x", "X", "n×d_model", pe)
