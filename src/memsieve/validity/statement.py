"""Does a memory state something that a later memory could overturn? A query-blind gate on the
validity stage's targets.

Small talk ("Hey Mel, good to see you!", "Sounds great! What kind of books do you have?",
"Thanks, talk soon!") states no value of its speaker, so nothing said later can make it out of
date. The relation verifier was trained on targets that always state a value, and on chat it
scores such pairs (a greeting and a later greeting) near 1: a share of its LoCoMo flags are of
this kind (benchmarks/RESULTS.md). Teaching the verifier itself that small talk is never
overturned pushed its scores down everywhere and cost real updates, so this is a separate,
single-purpose judgement (the paper's decomposition, §5: a target must state the slot before
any source can overturn it): a one-hidden-layer MLP over the memory's stored embedding. At
query time it reads the top-k's vectors from the retriever's index (two small matrix
products), and a result it rejects costs no verifier pass and is never flagged.

Supervision is generated only (``statement_examples``): positives are the validity generator's
targets and value-stating sources, tastes and doings told with feeling, some after a small-talk
lead-in or with a question back (so content after "Thanks!" still counts); negatives are small
talk composed from greeting, reaction, question-back, support, thanks, agreement, goodbye and
compliment families, the generator's reactions and elaborations, and questions about an
attribute that state nothing. The threshold keeps ``KEEP`` of the generator-validation
positives. Trained with ``memsieve train statement-gate`` (under a minute on 2 cores); the
checkpoint (``weights/statement-gate.pt``, ~200 KB, fp16) names the embedding model its vectors
come from, and the gate applies only to stores embedded with that model.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memsieve.errors import ConfigError

FORMAT = "memsieve.validity.statement/1"
DEFAULT_CHECKPOINT = Path(__file__).resolve().parent / "weights" / "statement-gate.pt"
KEEP = 0.99  # share of generator-validation positives the threshold lets through
HIDDEN = 256  # ReLU units of the gate's one hidden layer
ALPHA = 1e-3  # its L2 penalty

# -- small talk: families of utterances that state nothing about the speaker ---------------

_GREETINGS = ("Hey", "Hi", "Hello", "Hiya", "Morning", "Good morning", "Evening", "Yo",
              "Hey there", "Hi hi")
_HOW_ARE_YOU = ("how are you?", "how have you been?", "long time no see!", "how's it going?",
                "what's up?", "hope you're doing well.", "how was your weekend?",
                "good to hear from you!", "how's your week going?", "it's been a while!",
                "great to chat again!", "how are things?", "what's new with you?")
_INTERJECTIONS = ("Wow", "Oh wow", "Aw", "Omg", "Ooh", "Haha", "Yay", "Oh nice", "No way",
                  "Whoa", "Oh no", "Ah", "Hmm", "Yes", "Nice", "Woah", "Ahh", "Oh")
_REACTION_HEADS = ("that's", "that sounds", "that looks", "that seems", "sounds", "how",
                   "that's so", "that sounds really", "looks", "that must have been",
                   "that must be", "what a")
_REACTION_WORDS = ("amazing", "awesome", "great", "lovely", "fun", "fantastic", "wonderful",
                   "cool", "incredible", "beautiful", "hilarious", "rough", "tough", "scary",
                   "exciting", "relaxing", "special", "inspiring", "intense", "adorable",
                   "impressive", "stressful", "wild", "cute", "nice", "awful", "brave",
                   "meaningful", "peaceful", "epic")
_QUESTIONS_BACK = ("What was the best part?", "How did it go?", "Where was it?",
                   "Who did you go with?", "What made you choose that?", "How long did it take?",
                   "Was it hard?", "Did you enjoy it?", "Any pictures?",
                   "How do you feel about it?",
                   "What's next?", "Tell me more!", "What kind of stuff do you like?",
                   "How did you get into that?", "What inspired you?", "Was it crowded?",
                   "What did you think of it?", "How was the food?", "Did it help?",
                   "What's it like?", "How are you feeling now?", "When did that happen?",
                   "What are you up to these days?", "How's everything else?",
                   "Do you do that often?", "What did everyone think?", "Any plans for later?")
_SUPPORT = ("I'm so sorry to hear that.", "That must be hard.", "I'm here for you.",
            "Sending hugs!", "You've got this!", "Hang in there.", "I'm so proud of you!",
            "You deserve it.", "Good luck!", "Fingers crossed!", "Keep it up!",
            "I'm rooting for you.", "You're doing great.", "Don't be too hard on yourself.",
            "Take it easy, okay?", "Let me know if you need anything.", "I'm happy for you!",
            "That means a lot.", "You should be proud.", "Glad you're okay.")
_THANKS = ("Thanks!", "Thank you so much!", "Thanks for asking!", "Aw, thanks!",
           "Thanks, that's sweet of you.", "Appreciate it!", "Thanks for checking in.",
           "Thank you, really.", "Thanks a bunch!", "Cheers!")
_AGREE = ("Totally!", "Same here!", "I know, right?", "Absolutely.", "Haha, true.", "Exactly!",
          "For sure.", "Me too!", "I agree.", "So true.", "Right?", "Definitely.", "Yeah, totally.",
          "I hear you.", "Fair enough.", "I get that.", "Tell me about it.", "Ha, I bet.")
_BYES = ("Talk soon!", "Bye for now!", "Take care!", "Catch you later!", "Have a great night!",
         "See ya!", "Gotta run, talk later!", "Have a good one!", "Speak soon!",
         "Enjoy the rest of your day!", "Bye!", "Let's catch up again soon.", "Night!")
_COMPLIMENTS = ("You're so talented!", "Those look amazing.", "Love the photo!",
                "You look great in that.", "That's such a good idea.", "You're the best.",
                "I love that for you.", "That's really thoughtful of you.",
                "What a great picture!", "You always know what to say.")
_TOPIC = ("How's the {noun} going?", "What about your {noun}?", "Any news on your {noun}?",
          "How do you feel about your {noun} these days?", "Tell me about your {noun}!",
          "Is your {noun} still the same?", "I was wondering about your {noun}.",
          "Your {noun} sounds so interesting!", "What's your {noun} like?",
          "Do you ever think about your {noun}?")
_TAILS = ("", "", "", " :)", " haha", "!", " lol", " :D", " <3", " 😊")
_ASIDES = ("Thanks! ", "Haha, yes! ", "Aw, thanks. ", "Oh, good question. ", "Hey! ",
           "Totally. ", "Great to hear from you! ", "Sounds fun! ", "That's really interesting! ",
           "Oh, that's great! ", "Haha, same! ", "Speaking of which, ", "That's so cool! ",
           "Speaking of {noun}, ", "Oh nice! By the way, ", "Ha, that reminds me: ",
           "Sorry to hear that! ", "Aw, that's rough. ", "Congrats! ", "Hey, good to see you! ",
           "Wow! ", "Yeah, ")
_TOPICS = ("music", "books", "work", "movies", "travel", "food", "family", "weekends",
           "hobbies", "art", "plans", "week")
_ASKS_BACK = (" Have you tried it?", " What about you?", " Have you heard of it?",
              " Do you know it?", " You should check it out!", " What do you think?")
# the speaker's own taste, said with feeling: a value (what they like) a later turn can change
_OPINIONS = ("I love how {fav} {quality}; it's so {adj}.", "I really enjoy {fav}, it's so {adj}.",
             "I've been really into {fav} lately, the {aspect} is just {adj}.",
             "Honestly, {fav} is the best {kind} there is.", "I find {fav} really {adj} right now.",
             "I'm not a fan of {fav} anymore, it feels flat to me now.",
             "I love the {aspect} in {fav}, it keeps me hooked.",
             "{fav} always gets me, the {aspect} is so {adj}.",
             "I love how {pronoun} {quality}, it's {adj} every time.",
             "These days I'm all about {fav}; nothing else comes close.",
             "I've grown to appreciate {fav} more and more, it's {adj}.")
_QUALITIES = ("blends humour and heart", "keeps you on the edge of your seat",
              "creates such a strong sense of place", "captures real emotion",
              "never gets old", "brings so much energy", "makes everything feel calm",
              "tells a story without words", "mixes the old and the new")
_ASPECTS = ("atmosphere", "characters", "melodies", "colours", "flavours", "suspense", "energy",
            "writing", "details", "rhythm")
_FEELING = ("captivating", "calming", "powerful", "thought-provoking", "immersive", "inspiring",
            "relaxing", "exciting", "beautiful", "rich", "moving", "addictive")
# something the speaker did or is starting, told with feeling: content, not small talk
_EVENTS = ("a support group meeting", "a pottery class", "a charity run", "my cousin's wedding",
           "a jazz concert", "a job fair", "the farmers' market", "a camping trip",
           "an art workshop", "a conference on climate", "a book signing", "a hackathon",
           "a dance battle", "the museum", "a volunteering day", "a yoga retreat")
_WHEN = ("yesterday", "last weekend", "two days ago", "this morning", "last Friday",
         "over the summer", "last night", "a few weeks ago")
_DOINGS = ("I went to {event} {when} and it was so {adj}.", "Just got back from {event}, "
           "it was {adj}!", "I went to {event} {when}; honestly it was {adj}.",
           "I signed up for {event} {when}, so {adj}!", "I'm starting {venture} because I'm "
           "passionate about it.", "I took the kids to {event} {when}, they loved it.",
           "Been busy: I started {venture} {when}.", "I finally tried {event} {when}, so {adj}!")
_VENTURES = ("a dance studio", "an online shop", "a podcast", "a book club", "a small bakery",
             "a community garden", "a YouTube channel", "a running group", "a tutoring business")
# about the *other* speaker's doing: warm, but states nothing of the speaker
_ABOUT_YOU = ("I love that you're doing that!", "I love how you always make time for others.",
              "It's so inspiring that you went for it.", "I really admire how brave you are.",
              "I'm so glad you found something that makes you happy.",
              "I love that you found a group that gets you.",
              "You always have the best stories!", "I can tell how much it means to you.")


def _addressed(rng: random.Random, line: str, other: str) -> str:
    """``line`` addressed to the other speaker by name (before or after it), sometimes."""
    if not other or rng.random() < 0.6:
        return line
    if rng.random() < 0.4:
        return f"{other}, {line[0].lower()}{line[1:]}"
    end = line[-1] if line[-1] in "!.?" else ""
    return f"{line.rstrip('!.?')}, {other}{end or '!'}"


def small_talk(rng: random.Random, other: str = "", noun: str = "") -> str:
    """One small-talk line (one or two segments) that states nothing of the speaker."""
    def reaction() -> str:
        word = rng.choice(_REACTION_WORDS)
        head = rng.choice(_REACTION_HEADS)
        if head == "what a":
            body = (f"what {'an' if word[0] in 'aeiou' else 'a'} {word} "
                    + rng.choice(("story", "day", "time", "idea", "experience", "trip")))
        else:
            body = f"{head} {word}"
        lead = rng.choice(_INTERJECTIONS) + ", " if rng.random() < 0.6 else ""
        body = lead + body if lead else body[0].upper() + body[1:]
        return body + rng.choice(("!", ".", "!!"))

    families = [
        lambda: f"{rng.choice(_GREETINGS)}{' ' + other if other else ''}! "
                f"{rng.choice(_HOW_ARE_YOU).capitalize()}",
        reaction,
        lambda: rng.choice(_QUESTIONS_BACK),
        lambda: rng.choice(_SUPPORT),
        lambda: rng.choice(_THANKS),
        lambda: rng.choice(_AGREE),
        lambda: rng.choice(_BYES),
        lambda: rng.choice(_COMPLIMENTS),
        lambda: rng.choice(_TOPIC).format(noun=noun or rng.choice(("job", "trip", "week",
                                                                   "project", "family"))),
    ]
    first = rng.choice(families)()
    if rng.random() < 0.5:
        second = rng.choice(families[1:])()
        first = f"{first} {second}"
    tail = rng.choice(_TAILS)
    line = _addressed(rng, first, other)
    return line + ("" if tail == "!" and line[-1] in "!.?" else tail)


def statement_examples(n: int, seed: int) -> tuple[list[str], list[int]]:
    """``n`` speaker-prefixed turns and labels (1: states something of its speaker a later
    turn could overturn; 0: small talk), about half each, from ``seed`` alone."""
    from memsieve.validity.attributes import ATTRIBUTES, NAMES
    from memsieve.validity.generator import _COMMON, _ELABORATIONS, _REACTIONS, generate

    rng = random.Random(seed)
    stating = {"pos_explicit", "pos_new_value", "pos_ended", "pos_correction", "hard_detail",
               "hard_repeat", "hard_other_person", "hard_other_attribute"}
    positives: list[str] = []
    for ex in generate(n, seed):
        positives.append(ex.target)
        if ex.stratum in stating:
            positives.append(ex.source)
    preference = next(a for a in ATTRIBUTES if a.key == "preference")
    nouns = [a.noun for a in ATTRIBUTES if "{" not in a.noun] + list(_TOPICS)
    for _ in range(n // 8):  # opinions: a taste said with feeling
        frame = preference.frame(rng)
        fields = {**frame, **preference.value(rng, frame), "quality": rng.choice(_QUALITIES),
                  "aspect": rng.choice(_ASPECTS), "adj": rng.choice(_FEELING),
                  "pronoun": rng.choice(("he", "she", "they"))}
        speaker = "user" if rng.random() < 0.3 else rng.choice(NAMES)
        positives.append(f"{speaker}: {rng.choice(_OPINIONS).format(**fields)}")
    for _ in range(n // 10):  # doings: an event or a venture of the speaker's, with feeling
        line = rng.choice(_DOINGS).format(event=rng.choice(_EVENTS), when=rng.choice(_WHEN),
                                          adj=rng.choice(_FEELING), venture=rng.choice(_VENTURES))
        speaker = "user" if rng.random() < 0.3 else rng.choice(NAMES)
        positives.append(f"{speaker}: {line}")
    rng.shuffle(positives)
    positives = positives[: n // 2]
    for i in range(len(positives)):  # a third after a lead-in, a fifth ask something back
        speaker, sep, text = positives[i].partition(": ")
        if not sep:
            continue
        if i % 3 == 0:
            aside = rng.choice(_ASIDES).format(noun=rng.choice(nouns))
            lower = aside.endswith((", ", ": ")) and text.split(" ", 1)[0] in _COMMON
            text = aside + (text[0].lower() + text[1:] if lower else text)
        if i % 5 == 1:
            text += rng.choice(_ASKS_BACK)
        positives[i] = f"{speaker}: {text}"
    negatives: list[str] = []
    while len(negatives) < n - len(positives):
        agent = rng.random() < 0.3
        speaker, other = (("user", "") if rng.random() < 0.5 else ("assistant", "")) if agent \
            else tuple(rng.sample(NAMES, 2))
        r = rng.random()
        if r < 0.1:
            line = rng.choice(_REACTIONS).format(name=other or "there")
        elif r < 0.15:
            line = rng.choice(_ELABORATIONS)
        elif r < 0.2:
            line = _addressed(rng, rng.choice(_ABOUT_YOU), other)
        else:
            line = small_talk(rng, other, rng.choice(nouns))
        negatives.append(f"{speaker}: {line}")
    texts = positives + negatives
    labels = [1] * len(positives) + [0] * len(negatives)
    order = list(range(len(texts)))
    rng.shuffle(order)
    return [texts[i] for i in order], [labels[i] for i in order]


# -- the gate -------------------------------------------------------------------------------


class StatementGate:
    """``keeps(vectors)``: which memories (by their stored embeddings) state something a
    later memory could overturn. A small MLP (``layers``: (weight, bias) pairs, ReLU between,
    a sigmoid on the last); ``threshold`` on its probability."""

    def __init__(self, layers: Sequence[tuple[np.ndarray, np.ndarray]], threshold: float, *,
                 model: str, config: dict[str, Any] | None = None) -> None:
        # fp16 values (as saved), so a threshold calibrated before saving holds after loading
        self.layers = [(np.asarray(w, dtype=np.float16).astype(np.float32),
                        np.asarray(b, dtype=np.float16).astype(np.float32).ravel())
                       for w, b in layers]
        self.threshold, self.model = float(threshold), str(model)
        self.config = dict(config or {})

    @property
    def dim(self) -> int:
        return int(self.layers[0][0].shape[0])

    def scores(self, vectors: np.ndarray) -> np.ndarray:
        """P(states something) per row of ``vectors`` (n, d)."""
        h = np.asarray(vectors, dtype=np.float32)
        if h.ndim != 2 or h.shape[1] != self.dim:
            raise ConfigError(f"the statement gate expects (n, {self.dim}) vectors, got {h.shape}")
        for i, (w, b) in enumerate(self.layers):
            h = h @ w + b
            if i < len(self.layers) - 1:
                h = np.maximum(h, 0.0)
        return (1.0 / (1.0 + np.exp(-h[:, 0].astype(np.float64))))

    def keeps(self, vectors: np.ndarray) -> np.ndarray:
        return self.scores(vectors) >= self.threshold

    @classmethod
    def fit(cls, vectors: np.ndarray, labels: Sequence[int], *, model: str,
            hidden: int = HIDDEN, seed: int = 0) -> StatementGate:
        """scikit-learn's MLP (one ReLU layer of ``hidden`` units, Adam, early stopping on a
        tenth of the data; deterministic given ``seed``); the threshold is left at 0.5 until
        ``calibrate``."""
        from sklearn.neural_network import MLPClassifier

        y = np.asarray(labels)
        if len(set(y.tolist())) != 2:
            raise ConfigError("the statement gate needs both classes to train")
        mlp = MLPClassifier((hidden,), alpha=ALPHA, random_state=seed, max_iter=300,
                            early_stopping=True)
        mlp.fit(np.asarray(vectors, dtype=np.float64), y)
        return cls(list(zip(mlp.coefs_, mlp.intercepts_, strict=True)), 0.5, model=model,
                   config={"hidden": hidden, "alpha": ALPHA, "epochs": int(mlp.n_iter_)})

    def calibrate(self, vectors: np.ndarray, labels: Sequence[int],
                  keep: float = KEEP) -> float:
        """Set the threshold that keeps ``keep`` of the positives among ``vectors``."""
        s = self.scores(vectors)[np.asarray(labels) == 1]
        self.threshold = float(np.quantile(s, 1.0 - keep, method="lower"))
        return self.threshold

    def save(self, path: str | Path) -> Path:
        """Weights (fp16), threshold, embedding model and config in one file, written via a
        temporary file so a crash leaves no half-written checkpoint."""
        import torch

        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(path.suffix + ".tmp")
        layers = [(torch.from_numpy(w).half(), torch.from_numpy(b).half()) for w, b in self.layers]
        torch.save({"format": FORMAT, "layers": layers, "threshold": self.threshold,
                    "model": self.model, "config": self.config}, tmp)
        tmp.replace(path)
        return path

    @classmethod
    def load(cls, path: str | Path = DEFAULT_CHECKPOINT) -> StatementGate:
        import torch

        path = Path(path)
        if not path.is_file():
            raise ConfigError(f"no statement gate at {path}; train one with "
                              "`memsieve train statement-gate`")
        blob = torch.load(path, map_location="cpu", weights_only=True)
        if not isinstance(blob, dict) or blob.get("format") != FORMAT:
            raise ConfigError(f"{path} is not a statement gate")
        layers = [(w.float().numpy(), b.float().numpy()) for w, b in blob["layers"]]
        return cls(layers, blob["threshold"], model=blob["model"], config=blob.get("config"))


_PACKAGED: dict[str, StatementGate | None] = {}


def packaged_gate(encoder_name: str | None) -> StatementGate | None:
    """The released gate for a store embedded with ``encoder_name``; None when it was trained
    on another model's vectors or is not installed (then every target is judged)."""
    from memsieve.embed import MiniLMEncoder

    if (encoder_name or "").split(":")[0] != MiniLMEncoder.name:
        return None  # the only model a gate was trained on: other stores load nothing
    if "gate" not in _PACKAGED:
        _PACKAGED["gate"] = (StatementGate.load() if DEFAULT_CHECKPOINT.is_file() else None)
    gate = _PACKAGED["gate"]
    return gate if gate is not None and gate.model == MiniLMEncoder.name else None


def gate_from_spec(spec: str, encoder_name: str = "minilm") -> StatementGate | None:
    """A gate named on a command line: ``packaged`` (the released one, for stores embedded
    with ``encoder_name``), ``off`` (None), or a checkpoint path."""
    if spec == "off":
        return None
    return packaged_gate(encoder_name) if spec == "packaged" else StatementGate.load(spec)


def train_gate(seed: int = 7, *, n: int = 12_000, n_val: int = 3_000,
               out: str | Path = DEFAULT_CHECKPOINT, progress: bool = False) -> dict[str, Any]:
    """Generate, embed (MiniLM), fit, calibrate on a validation draw of another seed, save.
    Returns a report (validation AUC, the threshold, small-talk rejection at it)."""
    import time

    from sklearn.metrics import roc_auc_score

    from memsieve.embed import MiniLMEncoder

    t0 = time.perf_counter()
    encoder = MiniLMEncoder()
    texts, labels = statement_examples(n, seed)
    val_texts, val_labels = statement_examples(n_val, seed + 10_000)
    x = encoder.encode(texts, progress=progress)
    xv = encoder.encode(val_texts, progress=progress)
    gate = StatementGate.fit(x, labels, model=encoder.name, seed=seed)
    threshold = gate.calibrate(xv, val_labels)
    sv = gate.scores(xv)
    yv = np.asarray(val_labels)
    gate.config.update({"seed": seed, "n": n, "n_val": n_val, "keep": KEEP})
    path = gate.save(out)
    return {"seed": seed, "n": n, "n_val": n_val, "threshold": threshold,
            "validation_auc": float(roc_auc_score(yv, sv)),
            "validation_small_talk_rejected": float((sv[yv == 0] < threshold).mean()),
            "validation_statements_kept": float((sv[yv == 1] >= threshold).mean()),
            "wall_s": round(time.perf_counter() - t0, 1), "path": str(path.name)}


__all__ = ["DEFAULT_CHECKPOINT", "KEEP", "StatementGate", "gate_from_spec", "packaged_gate",
           "small_talk", "statement_examples", "train_gate"]
