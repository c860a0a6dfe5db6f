"""Tool-call arguments as agents name them: one name in any case style."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agno_compression._messages import PATH_KEYS, argument, argument_key, first_string, path_argument

WORDS = st.lists(
    st.sampled_from(["file", "path", "old", "new", "string", "replace", "all", "start", "line"]), min_size=1, max_size=3
)


def camel(words: list[str]) -> str:
    return words[0] + "".join(w.capitalize() for w in words[1:])


VALUES = st.one_of(st.text(alphabet="abc/._- ", max_size=5), st.integers(), st.booleans(), st.none())


@given(st.dictionaries(WORDS.map("_".join), VALUES, max_size=5))
def test_restyled_names_give_what_the_names_as_written_give(args: dict[str, object]) -> None:
    restyled = {camel(k.split("_")): v for k, v in args.items()}
    for key in args:
        assert first_string(restyled, [key]) == first_string(args, [key])
        assert argument(restyled, [key]) == argument(args, [key])
        assert argument_key(key) == argument_key(camel(key.split("_")))


def test_a_name_as_written_comes_before_another_style_of_it_and_none_is_no_value() -> None:
    assert first_string({"filePath": "/restyled", "file_path": "/as/written"}, ["file_path"]) == "/as/written"
    assert argument({"replace_all": None, "replaceAll": False}, ["replace_all"]) is False
    assert argument({"limit": 0}, ["limit"]) == 0 and argument({}, ["limit"]) is None
    assert path_argument({"FilePath": "/a.ts"}) == path_argument({"file-path": "/a.ts"}) == "/a.ts"
    assert all(path_argument({camel(k.split("_")): "/x"}) == "/x" for k in PATH_KEYS)
