/** A path inside the app that is no page. */
import { Link } from 'react-router';
import { PageHeader } from '../components/page-header';

export function NotFoundPage() {
  return (
    <>
      <PageHeader title="No such page" docTitle="Not found" />
      <p>
        <Link to="/">Go to the overview</Link>
      </p>
    </>
  );
}
